package bench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the driver the judge's SQLite store uses
)

// The counts below read the stores directly, not through the judge, so that "all
// points stored" is checked by the engine. They know the stores' layouts: one row of
// table points per point (judge/store/sqlite), one document per point in the indices
// <prefix>* (judge/store/elastic). If a layout changes, only these functions do.

// sqliteCount counts the rows of the judge's SQLite file, read-only beside the running
// judge (WAL mode lets it read while the judge writes).
func sqliteCount(ctx context.Context, path string) (int64, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, fmt.Errorf("count points in %s: %w", path, err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM points").Scan(&n); err != nil {
		return 0, fmt.Errorf("count points in %s: %w", path, err)
	}
	return n, nil
}

// engine is the Elasticsearch-API engine behind the judge's elastic store, reached
// with its plain REST API.
type engine struct {
	base, prefix string
	hc           *http.Client
}

func newEngine(base, prefix string) *engine {
	return &engine{base: strings.TrimRight(base, "/"), prefix: prefix, hc: &http.Client{Timeout: time.Minute}}
}

// count refreshes the run's indices and counts their documents.
func (e *engine) count(ctx context.Context) (int64, error) {
	// The prefix is the run's own, lowercase letters, digits and '-': no escaping.
	pattern := e.prefix + "*"
	if err := e.do(ctx, http.MethodPost, "/"+pattern+"/_refresh", nil); err != nil {
		return 0, err
	}
	var c struct {
		Count int64 `json:"count"`
	}
	if err := e.do(ctx, http.MethodGet, "/"+pattern+"/_count", &c); err != nil {
		return 0, err
	}
	return c.Count, nil
}

// drop deletes the run's indices and the index templates whose patterns start with its
// prefix (the store installs one on its first write). Names are listed first, since an
// engine may refuse wildcard deletes (action.destructive_requires_name).
func (e *engine) drop(ctx context.Context) error {
	var indices []struct {
		Index string `json:"index"`
	}
	if err := e.do(ctx, http.MethodGet, "/_cat/indices/"+e.prefix+"*?format=json&h=index", &indices); err != nil {
		return err
	}
	var names []string
	for _, ix := range indices {
		names = append(names, ix.Index)
	}
	if len(names) > 0 {
		if err := e.do(ctx, http.MethodDelete, "/"+strings.Join(names, ","), nil); err != nil {
			return err
		}
	}
	var tmpl struct {
		IndexTemplates []struct {
			Name          string `json:"name"`
			IndexTemplate struct {
				IndexPatterns []string `json:"index_patterns"`
			} `json:"index_template"`
		} `json:"index_templates"`
	}
	if err := e.do(ctx, http.MethodGet, "/_index_template", &tmpl); err != nil {
		return err
	}
	for _, t := range tmpl.IndexTemplates {
		for _, p := range t.IndexTemplate.IndexPatterns {
			if strings.HasPrefix(p, e.prefix) {
				if err := e.do(ctx, http.MethodDelete, "/_index_template/"+url.PathEscape(t.Name), nil); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// do sends one request and decodes a 2xx answer into out (when not nil).
func (e *engine) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, e.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return fmt.Errorf("elasticsearch %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("elasticsearch %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("elasticsearch %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(body[:min(len(body), 500)]))
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("elasticsearch %s %s: %w", method, path, err)
		}
	}
	return nil
}
