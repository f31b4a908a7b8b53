package benchkit

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/binlake/binlake/internal/config"
)

// CheckBinary checks that path is an executable file to start as the role.
func CheckBinary(role, path string) error {
	if path == "" {
		return fmt.Errorf("no binlake binary to start as the %s", role)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s binary: %w", role, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s binary %s is not an executable file", role, path)
	}
	return nil
}

// CheckBrokers checks the -brokers flag: at least one host:port.
func CheckBrokers(brokers []string) error {
	if len(brokers) == 0 {
		return errors.New("-brokers: at least one host:port")
	}
	for _, b := range brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("-brokers: %q is not host:port", config.Redact(b))
		}
	}
	return nil
}
