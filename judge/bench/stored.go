package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/binlake/binlake/judge/store"
	"github.com/binlake/binlake/judge/store/elastic"
	"github.com/binlake/binlake/judge/store/sqlite"
)

// The counts below open the store the judge wrote, after it stopped, and count what its
// Scan reads back over all time: the engine is asked, not the judge's own counters.

// countPoints counts every point a store holds.
func countPoints(ctx context.Context, st store.Store) (int64, error) {
	if err := st.Refresh(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := st.Scan(ctx, time.Unix(0, 0), time.Now().Add(24*time.Hour), func(ps []store.Point) error {
		n += int64(len(ps))
		return nil
	})
	return n, err
}

// sqliteCount counts the points of the judge's SQLite file.
func sqliteCount(ctx context.Context, path string) (int64, error) {
	st, err := sqlite.Open(sqlite.Options{Path: path})
	if err != nil {
		return 0, fmt.Errorf("count points in %s: %w", path, err)
	}
	defer st.Close()
	n, err := countPoints(ctx, st)
	if err != nil {
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

// count counts the points in the run's indices.
func (e *engine) count(ctx context.Context) (int64, error) {
	st, err := elastic.New(elastic.Options{Config: elasticsearch.Config{Addresses: []string{e.base}}, Prefix: e.prefix})
	if err != nil {
		return 0, fmt.Errorf("count points in %s*: %w", e.prefix, err)
	}
	defer st.Close()
	n, err := countPoints(ctx, st)
	if err != nil {
		return 0, fmt.Errorf("count points in %s*: %w", e.prefix, err)
	}
	return n, nil
}

// drop deletes the run's indices (its records index too) and the index templates whose
// patterns start with its prefix (the store installs one on its first write). Names are
// listed first, since an engine may refuse wildcard deletes
// (action.destructive_requires_name); the records index is listed as a pattern, which
// matches nothing rather than failing when the run wrote no record.
func (e *engine) drop(ctx context.Context) error {
	var indices []struct {
		Index string `json:"index"`
	}
	list := "/_cat/indices/" + e.prefix + "*," + elastic.RecordsIndex(e.prefix) + "*?format=json&h=index"
	if err := e.do(ctx, http.MethodGet, list, &indices); err != nil {
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
