//go:build !agentonly

package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/store/elastic"
)

// elasticStore builds the Elasticsearch store of a judge config whose store.kind is
// elastic, with its credentials, and describes it for the log. It does not contact the
// engine. The judge writes to it; `binlake alarm test -judge-config` reads its history.
func elasticStore(cfg judge.Config, cfgPath string, logger *slog.Logger) (*elastic.Store, string, error) {
	e := cfg.Store.Elastic
	pw, key, err := cfg.ElasticCredentials()
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", cfgPath, err)
	}
	esCfg, err := elastic.Conn{Addresses: e.Addresses, CAFile: e.CAFile, Username: e.Username, Password: pw, APIKey: key}.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	s, err := elastic.New(elastic.Options{
		Config: esCfg,
		Prefix: e.Prefix, Replicas: e.Replicas, RefreshInterval: e.RefreshInterval.D(), Logger: logger,
	})
	if err != nil {
		return nil, "", err
	}
	return s, "elastic " + strings.Join(e.Addresses, ","), nil
}
