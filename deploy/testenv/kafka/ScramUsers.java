// Creates (or updates) a SCRAM user on the local test broker, for its SASL_SSL listener
// (deploy/testenv/kafka.sh). Kafka 4 keeps SCRAM credentials in the cluster metadata and
// sets them through the Admin API; the broker's jars lack the kafka-configs tool.
// Usage: java -cp <kafka jars>:<this class> ScramUsers BOOTSTRAP USER PASSWORD_FILE
// Both SCRAM-SHA-256 and SCRAM-SHA-512 credentials are set; re-running replaces them.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;

public class ScramUsers {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: ScramUsers BOOTSTRAP USER PASSWORD_FILE");
            System.exit(2);
        }
        String password = new String(Files.readAllBytes(Path.of(args[2])), StandardCharsets.UTF_8).trim();
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("client.id", "binlake-testenv-scram");
        try (Admin admin = Admin.create(props)) {
            // One request per mechanism: the broker refuses two alterations of a user in one.
            for (ScramMechanism m : List.of(ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)) {
                admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialUpsertion(args[1], new ScramCredentialInfo(m, 4096), password)
                )).all().get(60, TimeUnit.SECONDS);
            }
            // The broker applies the credentials when its metadata image catches up; return
            // once it lists both, so that a test right after `kafka.sh up` can log in.
            long deadline = System.currentTimeMillis() + 60_000;
            while (true) {
                UserScramCredentialsDescription d = admin.describeUserScramCredentials(List.of(args[1]))
                    .description(args[1]).get(30, TimeUnit.SECONDS);
                if (d.credentialInfos().size() >= 2) break;
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("the broker does not list both SCRAM credentials of " + args[1]);
                Thread.sleep(200);
            }
        }
        System.out.println("SCRAM-SHA-256 and SCRAM-SHA-512 credentials set for " + args[1]);
    }
}
