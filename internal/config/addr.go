package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// CheckListen checks addr, an address to listen on: host:port (an empty host is every
// interface) with a port number from 0 to 65535, 0 picking a free one. net.SplitHostPort
// alone passes "127.0.0.1:80911", which only net.Listen, at start, would refuse.
func CheckListen(addr string) error {
	if err := checkHostPort(addr, 0); err != nil {
		return err
	}
	return checkLocalHost(addr)
}

// checkLocalHost refuses a listen address whose host is an IP that is not this
// machine's: the start's bind fails ("cannot assign requested address"), where the check
// passed it (an outside trial). A host name is left to the start, which resolves it; so
// is a machine whose addresses cannot be listed.
func checkLocalHost(addr string) error {
	host, _, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() || ip.IsLoopback() {
		return nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var mine []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if n.IP.Equal(ip) {
				return nil
			}
			mine = append(mine, n.IP.String())
		}
	}
	return fmt.Errorf("%q: %s is not an address of this machine (its addresses: %s; an empty host or 0.0.0.0 listens on every one)",
		addr, host, strings.Join(mine, ", "))
}

// CheckDial checks addr, an address to connect to (a broker, a ZooKeeper server):
// host:port with a port number from 1 to 65535.
func CheckDial(addr string) error { return checkHostPort(addr, 1) }

func checkHostPort(addr string, minPort int) error {
	if strings.Contains(addr, "@") {
		// No host name has a '@': a user, and maybe a password, was pasted in. The part
		// after ':' may be the password, so no piece of addr is quoted unredacted.
		return fmt.Errorf("%q: want host:port, without a user or password", Redact(addr))
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		if minPort == 0 {
			return fmt.Errorf("%q: want host:port, e.g. 127.0.0.1:8090 (port 0 picks a free one)", addr)
		}
		return fmt.Errorf("%q: want host:port, e.g. kafka-1:9092", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < minPort || n > 65535 {
		if minPort == 0 {
			return fmt.Errorf("%q: port %q: want a number from 0 to 65535 (0 picks a free one)", addr, port)
		}
		return fmt.Errorf("%q: port %q: want a number from 1 to 65535", addr, port)
	}
	return nil
}
