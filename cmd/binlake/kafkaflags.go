//go:build !agentonly

package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/binlake/binlake/internal/bus/kafka"
	"github.com/binlake/binlake/internal/config"
)

// kafkaPasswordEnv holds the SASL password of -sasl-user (it wins over the file).
const kafkaPasswordEnv = "BINLAKE_KAFKA_PASSWORD"

// kafkaFlags are a command's flags for a Kafka cluster without a config file: -brokers,
// then -tls-* and -sasl-* as the listener needs.
type kafkaFlags struct {
	fs                                        *flag.FlagSet
	brokers                                   string
	tls                                       bool
	caFile, certFile, keyFile, serverName     string
	saslMechanism, saslUser, saslPasswordFile string
}

func addKafkaFlags(fs *flag.FlagSet) *kafkaFlags {
	k := &kafkaFlags{fs: fs}
	fs.StringVar(&k.brokers, "brokers", "", "Kafka brokers, comma-separated host:port")
	fs.BoolVar(&k.tls, "tls", false, "with -brokers: connect with TLS, trusting the system's CAs (implied by the other -tls flags)")
	fs.StringVar(&k.caFile, "tls-ca-file", "", "with -brokers: PEM file of the CAs that sign the brokers' certificates")
	fs.StringVar(&k.certFile, "tls-cert-file", "", "with -brokers: client certificate (PEM), for brokers that require one")
	fs.StringVar(&k.keyFile, "tls-key-file", "", "with -tls-cert-file: its key (PEM)")
	fs.StringVar(&k.serverName, "tls-server-name", "", "with -brokers: the name to check in the brokers' certificates (default: the host dialled)")
	fs.StringVar(&k.saslMechanism, "sasl-mechanism", "", "with -brokers: "+config.SASLPlain+", "+config.SASLScramSHA256+" or "+config.SASLScramSHA512)
	fs.StringVar(&k.saslUser, "sasl-user", "", "with -sasl-mechanism: the user")
	fs.StringVar(&k.saslPasswordFile, "sasl-password-file", "", "with -sasl-user: the file holding the password (or set "+kafkaPasswordEnv+")")
	return k
}

// set returns the first of the flags given ("-brokers", "-tls", …), "" when none was.
func (k *kafkaFlags) set() string {
	for _, f := range []string{"brokers", "tls", "tls-ca-file", "tls-cert-file", "tls-key-file", "tls-server-name", "sasl-mechanism", "sasl-user", "sasl-password-file"} {
		if flagSet(k.fs, f) {
			return "-" + f
		}
	}
	return ""
}

// options returns the client options the flags describe; cmd prefixes the errors.
func (k *kafkaFlags) options(cmd, clientID string, logger *slog.Logger) (kafka.Options, error) {
	o := kafka.Options{ClientID: clientID, Logger: logger, Brokers: strings.Split(k.brokers, ",")}
	if k.tls || k.caFile != "" || k.certFile != "" || k.keyFile != "" || k.serverName != "" {
		t := &config.ClientTLS{CAFile: k.caFile, CertFile: k.certFile, KeyFile: k.keyFile, ServerName: k.serverName}
		var err error
		if o.TLS, err = t.Load("tls"); err != nil {
			return o, fmt.Errorf("%s: -tls-ca-file, -tls-cert-file, -tls-key-file: %w", cmd, err)
		}
	}
	if k.saslMechanism != "" || k.saslUser != "" || k.saslPasswordFile != "" {
		if k.saslMechanism == "" || k.saslUser == "" {
			return o, errors.New(cmd + ": SASL needs -sasl-mechanism and -sasl-user (and -sasl-password-file or " + kafkaPasswordEnv + ")")
		}
		pw, err := config.ResolveSecret("", kafkaPasswordEnv, k.saslPasswordFile)
		if err == nil && pw == "" {
			err = fmt.Errorf("no password: give -sasl-password-file or set %s", kafkaPasswordEnv)
		}
		if err != nil {
			return o, fmt.Errorf("%s: -sasl-user %s: %w", cmd, k.saslUser, err)
		}
		o.SASL = &kafka.SASL{Mechanism: k.saslMechanism, Username: k.saslUser, Password: pw}
	}
	return o, nil
}
