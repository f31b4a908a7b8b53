package config

import (
	"crypto/x509"
	"fmt"
	"os"
)

// LoadCAPool reads the PEM certificates at path: the CAs a client trusts instead of the
// system's (a Kafka broker, Elasticsearch, an SMTP relay, the judge or the alarm over
// HTTPS). It returns the pool and the PEM bytes (go-elasticsearch takes the bytes). The
// errors name the file and never its content.
func LoadCAPool(path string) (*x509.CertPool, []byte, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, pem, nil
}
