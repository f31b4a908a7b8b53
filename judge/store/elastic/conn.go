package elastic

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/binlake/binlake/internal/config"
)

// Conn is how the store reaches the engine: its addresses, the certificate authorities
// that signed its certificate (https addresses), and basic auth or an API key.
type Conn struct {
	Addresses []string
	// CAFile is a PEM file of certificate authorities, trusted instead of the
	// system's; empty keeps the system's.
	CAFile string
	// Username and Password are basic auth; APIKey ("Authorization: ApiKey") replaces
	// them: the "encoded" value Elasticsearch returns, or "<id>:<api_key>".
	Username string
	Password config.Secret
	APIKey   config.Secret
}

// ClientConfig is the go-elasticsearch configuration of c: the CA file read (its error
// names the file), the API key encoded. Secrets go only into the client's configuration,
// never into an error.
func (c Conn) ClientConfig() (elasticsearch.Config, error) {
	cfg := elasticsearch.Config{Addresses: c.Addresses}
	if c.CAFile != "" {
		_, pem, err := config.LoadCAPool(c.CAFile)
		if err != nil {
			return cfg, fmt.Errorf("elastic store: CA file: %w", err)
		}
		cfg.CACert = pem
	}
	if c.APIKey != "" {
		if c.Username != "" {
			return cfg, errors.New("elastic store: set username/password or an API key, not both")
		}
		cfg.APIKey = encodeAPIKey(c.APIKey.Reveal())
		return cfg, nil
	}
	if c.Username == "" && c.Password != "" {
		return cfg, errors.New("elastic store: a password without username")
	}
	cfg.Username, cfg.Password = c.Username, c.Password.Reveal()
	return cfg, nil
}

// encodeAPIKey returns the header value of an API key given as "<id>:<api_key>" or
// already encoded (base64 of that, which has no ':').
func encodeAPIKey(k string) string {
	if strings.Contains(k, ":") {
		return base64.StdEncoding.EncodeToString([]byte(k))
	}
	return k
}
