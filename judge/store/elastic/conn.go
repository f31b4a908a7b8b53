package elastic

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/binlake/binlake/internal/config"
)

// Conn is how the store reaches the engine: its addresses, the certificate authorities
// that signed its certificate (https addresses), and basic auth or an API key.
type Conn struct {
	Addresses []string
	// TLS is the client's TLS configuration for https addresses (config.ClientTLS's
	// Load: the CAs trusted instead of the system's, a client certificate); nil keeps
	// the system's CAs.
	TLS *tls.Config
	// Username and Password are basic auth; APIKey ("Authorization: ApiKey") replaces
	// them: the "encoded" value Elasticsearch returns, or "<id>:<api_key>".
	Username string
	Password config.Secret
	APIKey   config.Secret
}

// ClientConfig is the go-elasticsearch configuration of c: its TLS on a transport of
// its own, the API key encoded. Secrets go only into the client's configuration,
// never into an error.
func (c Conn) ClientConfig() (elasticsearch.Config, error) {
	cfg := elasticsearch.Config{Addresses: c.Addresses}
	if c.TLS != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = c.TLS
		cfg.Transport = t
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
