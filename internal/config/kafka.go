package config

import (
	"errors"
	"fmt"
	"net"
)

// Kafka is what every Kafka section has in common: the wave's and the agent's sink.kafka
// and the bus section of the judge and the alarm. Each embeds it inline and adds its own
// keys (the topic, producer tuning, the consumer group), so that these keys are spelled,
// mean and are checked the same in every role; each role keeps its own defaults.
type Kafka struct {
	// Brokers are the bootstrap brokers, host:port each.
	Brokers []string `yaml:"brokers"`
	// Partitions and Replication are those of a topic the role creates because it is
	// missing; an existing topic is used as it is.
	Partitions  int `yaml:"partitions"`
	Replication int `yaml:"replication"`
}

// Validate checks the section once the role filled its defaults. prefix is where the
// role keeps it ("sink.kafka", "bus"), so that every error names the key as the file
// spells it ("sink.kafka.brokers[1]"); all problems are reported, joined.
func (k Kafka) Validate(prefix string) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("field %q: %s", prefix+"."+key, fmt.Sprintf(format, args...)))
	}
	if len(k.Brokers) == 0 {
		bad("brokers", "required: at least one host:port")
	}
	for i, b := range k.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			bad(fmt.Sprintf("brokers[%d]", i), "%q is not host:port", b)
		}
	}
	if k.Partitions < 1 {
		bad("partitions", "%d: want at least 1", k.Partitions)
	}
	if k.Replication < 1 {
		bad("replication", "%d: want at least 1", k.Replication)
	}
	return errors.Join(errs...)
}
