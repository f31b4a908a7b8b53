//go:build !agentonly

package main

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/judge"
	"github.com/binlake/binlake/judge/store/elastic"
)

// elasticStore builds the Elasticsearch store of a judge config whose store.kind is
// elastic, with its credentials, and describes it for the log. It does not contact the
// engine. The judge writes to it; `binlake alarm test -judge-config` reads its history.
func elasticStore(cfg judge.Config, cfgPath string, logger *slog.Logger) (*elastic.Store, string, error) {
	opts, err := elasticOptions(cfg, logger)
	if err != nil {
		return nil, "", config.Locate(cfgPath, err)
	}
	s, err := elastic.New(*opts)
	if err != nil {
		return nil, "", err
	}
	return s, "elastic " + strings.Join(cfg.Store.Elastic.Addresses, ","), nil
}

// elasticOptions resolves the store.elastic section (the index prefix, the credentials,
// the client's TLS) into the store's options, every problem naming its key. The judge's
// --check runs it too, so that it refuses what start would.
func elasticOptions(cfg judge.Config, logger *slog.Logger) (*elastic.Options, error) {
	e := cfg.Store.Elastic
	var errs []error
	if err := elastic.CheckPrefix(cmp.Or(e.Prefix, elastic.DefaultPrefix)); err != nil {
		errs = append(errs, config.Bad("store.elastic.prefix", "%w", err))
	}
	pw, key, err := cfg.ElasticCredentials()
	if err != nil {
		errs = append(errs, err)
	}
	tc, err := e.TLS.Load("store.elastic.tls")
	if err != nil {
		errs = append(errs, err)
	}
	esCfg, err := elastic.Conn{Addresses: e.Addresses, TLS: tc, Username: e.Username, Password: pw, APIKey: key}.ClientConfig()
	if err != nil {
		errs = append(errs, config.Bad("store.elastic", "%w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &elastic.Options{Config: esCfg, Prefix: e.Prefix, Replicas: e.Replicas,
		RefreshInterval: e.RefreshInterval.D(), Logger: logger}, nil
}

// judgeStoreDesc names the store for the start-up line: the SQLite file, or the
// Elasticsearch addresses and the index prefix.
func judgeStoreDesc(cfg judge.Config) string {
	if cfg.Store.Kind == judge.StoreElastic {
		e := cfg.Store.Elastic
		return fmt.Sprintf("elastic %s prefix %s", strings.Join(e.Addresses, ","), cmp.Or(e.Prefix, elastic.DefaultPrefix))
	}
	return "sqlite " + absPath(cfg.Store.SQLite.Path)
}

// absPath is path made absolute for a start line, which says where data goes: a
// relative one ("./data/judge.db") depends on a working directory the log does not show.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
