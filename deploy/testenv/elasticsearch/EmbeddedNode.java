// EmbeddedNode runs a single Elasticsearch 7.17 node inside this JVM for the test services
// (deploy/testenv/elasticsearch.sh). The distribution's tarball is not on Maven Central, but the
// server jar and the netty4 plugin are: a Node subclass can hand the plugin to the node as a
// "classpath plugin", which is how Elasticsearch's own integration tests start nodes. Without
// the netty4 plugin the node would have no HTTP or transport layer at all.
//
// Usage: java -cp CLASSES:LIB/* EmbeddedNode HOME
// HOME must hold config/elasticsearch.yml and config/log4j2.properties (written by the script).
// Settings come from that yml only, so the script stays the one place that says what runs.
//
// Bootstrap checks, the security manager and seccomp are Bootstrap's work, not Node's, so none of
// them apply here; that is fine for a node bound to 127.0.0.1 that only tests talk to.

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.transport.Netty4Plugin;

public final class EmbeddedNode {

    /** ClasspathNode exists only to reach Node's protected constructor that takes classpath plugins. */
    static final class ClasspathNode extends Node {
        ClasspathNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
            super(env, plugins, true);
        }
    }

    public static void main(String[] args) {
        if (args.length != 1) {
            fail("usage: EmbeddedNode HOME (a folder with config/elasticsearch.yml)", null);
        }
        Path home = Paths.get(args[0]).toAbsolutePath();
        Path yml = home.resolve("config").resolve("elasticsearch.yml");
        if (!Files.isRegularFile(yml)) {
            fail("missing " + yml + "; deploy/testenv/elasticsearch.sh writes it", null);
        }

        Node node;
        try {
            Settings input = Settings.builder().put("path.home", home.toString()).build();
            // prepareEnvironment reads config/elasticsearch.yml and layers it under `input`.
            Environment env = InternalSettingsPreparer.prepareEnvironment(
                input, Collections.emptyMap(), home.resolve("config"), () -> "binlake-es");
            LogConfigurator.registerErrorListener();
            LogConfigurator.setNodeName(Node.NODE_NAME_SETTING.get(env.settings()));
            LogConfigurator.configure(env);
            List<Class<? extends Plugin>> plugins = List.of(Netty4Plugin.class);
            node = new ClasspathNode(env, plugins);
        } catch (Throwable e) {
            fail("cannot build the node", e);
            return;
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(15, TimeUnit.SECONDS);
            } catch (Throwable e) {
                System.err.println("EmbeddedNode: error while stopping: " + e);
            } finally {
                stopped.countDown();
            }
        }, "embedded-node-shutdown"));

        try {
            node.start();
        } catch (Throwable e) {
            fail("cannot start the node", e);
        }
        System.out.println("EmbeddedNode: started Elasticsearch "
            + org.elasticsearch.Version.CURRENT + " with home " + home);

        // The node's own threads may all be daemons; keep the JVM up until SIGTERM/SIGINT.
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void fail(String what, Throwable cause) {
        System.err.println("EmbeddedNode: FATAL: " + what + (cause == null ? "" : ": " + cause));
        if (cause != null) {
            cause.printStackTrace(System.err);
        }
        System.err.flush();
        // halt, not exit: a half-built node's non-daemon threads or shutdown hook must not keep us up.
        Runtime.getRuntime().halt(1);
    }
}
