package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/internal/jsonenc"
	"github.com/binlake/binlake/judge/api"
)

// Limits of POST /v1/rebalance. The body limit leaves about 300 bytes per instance at
// the most instances, more than an entry with long ids and a moved_at takes.
const (
	MaxRebalanceBytes     = 32 << 20
	MaxRebalanceWaves     = 10_000
	MaxRebalanceInstances = 100_000
)

const rebalanceExample = `{"waves":[{"node":"wave-1","alive":true}],"instances":[{"id":"orders","node":"wave-1"}]}`

// handleRebalance plans for the cluster in the request (POST /v1/rebalance).
func (j *Judge) handleRebalance(w http.ResponseWriter, r *http.Request) {
	req, err := DecodeRebalanceRequest(http.MaxBytesReader(w, r.Body, MaxRebalanceBytes))
	if err == nil {
		err = j.checkMovedAt(req)
	}
	if err != nil {
		j.writeError(w, r, err)
		return
	}
	ans := j.PlanRebalance(req)
	j.m.rebalancePlans.WithLabelValues(planSourcePost).Inc()
	j.log.Debug("rebalance planned", "source", planSourcePost, "waves", len(req.Waves), "instances", len(req.Instances),
		"moves", len(ans.Moves), "balanced", ans.Balanced, "unmet", ans.Unmet)
	httpapi.WriteJSON(w, r, http.StatusOK, ans)
}

// checkMovedAt refuses an instance said to have moved well after the judge's clock
// (more than maxAhead, the agents' allowance for a drifting clock): the cooldown counts
// from it, so that instance would never move again.
func (j *Judge) checkMovedAt(req api.RebalanceRequest) error {
	now := j.now()
	for i, in := range req.Instances {
		if ahead := in.MovedAt.Sub(now); ahead > maxAhead {
			return invalid("instances[%d].moved_at %s is %s ahead of the judge's clock (at most %s): the cooldown counts from it",
				i, in.MovedAt.UTC().Format(time.RFC3339), aheadBy(in.MovedAt, now), maxAhead)
		}
	}
	return nil
}

// handleRebalanceView plans from the judge's own view (GET /v1/rebalance): a dry run
// that changes nothing.
func (j *Judge) handleRebalanceView(w http.ResponseWriter, r *http.Request) {
	ans := j.PlanRebalanceFromView()
	j.m.rebalancePlans.WithLabelValues(planSourceGet).Inc()
	httpapi.WriteJSON(w, r, http.StatusOK, ans)
}

// DecodeRebalanceRequest reads a rebalance request strictly: one JSON object with known
// fields, at most MaxRebalanceWaves waves and MaxRebalanceInstances instances, every
// node and instance id non-empty, valid UTF-8 and at most 255 bytes, none listed twice.
func DecodeRebalanceRequest(r io.Reader) (api.RebalanceRequest, error) {
	var req api.RebalanceRequest
	data, err := io.ReadAll(r)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return req, err
		}
		return req, invalid("read rebalance request: %v", err)
	}
	switch b := bytes.TrimSpace(data); {
	case len(b) == 0:
		return req, invalid("empty body: want a JSON object like %s", rebalanceExample)
	case b[0] != '{':
		// null and [] would decode without an error into an empty request.
		return req, invalid("malformed rebalance request: want a JSON object like %s", rebalanceExample)
	}
	if path, bad := jsonenc.InvalidUTF8(data); bad {
		// encoding/json would replace the bytes with U+FFFD: an id the balancer did not send.
		return req, invalid("malformed rebalance request: %s: invalid UTF-8", path)
	}
	var raw rebalanceJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return req, invalid("malformed rebalance request: field %s: a JSON %s where %s belongs", entryPath(data, te.Field), te.Value, httpapi.JSONKind(te.Type.Kind()))
		}
		var pe *time.ParseError
		if errors.As(err, &pe) { // moved_at, the request's one time
			return req, invalid("malformed rebalance request: %s %q is not an RFC 3339 time (like 2026-12-04T21:00:00Z)", entryPath(data, "instances.moved_at"), pe.Value)
		}
		return req, invalid("malformed rebalance request: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, invalid("malformed rebalance request: data after the JSON object")
	}
	if path, ok := jsonenc.DuplicateKey(data); ok {
		return req, invalid("malformed rebalance request: field %s is given twice", path)
	}
	if len(raw.Waves) > MaxRebalanceWaves {
		return req, invalid("waves lists %d waves, at most %d", len(raw.Waves), MaxRebalanceWaves)
	}
	req.Instances = raw.Instances
	if raw.Waves != nil {
		req.Waves = make([]api.RebalanceWave, len(raw.Waves))
	}
	for i, w := range raw.Waves {
		if w.Alive == nil {
			return req, invalid("waves[%d].alive is missing: say whether the wave is registered (false moves its instances away)", i)
		}
		req.Waves[i] = api.RebalanceWave{Node: w.Node, Alive: *w.Alive}
	}
	return req, checkRebalance(&req)
}

// rebalanceJSON is a request as decoded. A wave's alive is a pointer so that a wave
// without it is refused rather than taken for dead, which would move all of its
// instances away.
type rebalanceJSON struct {
	Waves     []rebalanceWaveJSON     `json:"waves"`
	Instances []api.RebalanceInstance `json:"instances"`
}

// rebalanceWaveJSON is a wave as the request gives it: alive must be said.
type rebalanceWaveJSON struct {
	Node  string `json:"node"`
	Alive *bool  `json:"alive"`
}

// entryPath is field ("waves.alive", as encoding/json names it, without the index) with
// the index of the first entry of its list that does not decode ("waves[3].alive"): a
// type error in one of 100,000 instances named no entry the operator could find. field
// as it is when it is not in a list, or no entry fails alone.
func entryPath(data []byte, field string) string {
	list, rest, ok := strings.Cut(field, ".")
	var lists map[string][]json.RawMessage
	if !ok || json.Unmarshal(data, &lists) != nil {
		return field
	}
	for i, raw := range lists[list] {
		var err error
		switch list {
		case "waves":
			err = json.Unmarshal(raw, &rebalanceWaveJSON{})
		case "instances":
			err = json.Unmarshal(raw, &api.RebalanceInstance{})
		default:
			return field
		}
		if err != nil {
			return fmt.Sprintf("%s[%d].%s", list, i, rest)
		}
	}
	return field
}

// checkRebalance checks a decoded request's lists.
func checkRebalance(req *api.RebalanceRequest) error {
	if len(req.Waves) > MaxRebalanceWaves {
		return invalid("waves lists %d waves, at most %d", len(req.Waves), MaxRebalanceWaves)
	}
	if len(req.Instances) > MaxRebalanceInstances {
		return invalid("instances lists %d instances, at most %d", len(req.Instances), MaxRebalanceInstances)
	}
	waves := make(map[string]int, len(req.Waves))
	for i, w := range req.Waves {
		if err := checkElemIdent("waves", i, "node", w.Node); err != nil {
			return err
		}
		if first, dup := waves[w.Node]; dup {
			return invalid("waves[%d]: node %q is listed twice (first as waves[%d])", i, w.Node, first)
		}
		waves[w.Node] = i
	}
	insts := make(map[string]int, len(req.Instances))
	for i, in := range req.Instances {
		if err := checkElemIdent("instances", i, "id", in.ID); err != nil {
			return err
		}
		// An empty node is an instance assigned to no wave yet: the plan places it like a
		// dead wave's (the failover goal).
		if in.Node != "" {
			if err := checkElemIdent("instances", i, "node", in.Node); err != nil {
				return err
			}
		}
		if first, dup := insts[in.ID]; dup {
			return invalid("instances[%d]: id %q is listed twice (first as instances[%d])", i, in.ID, first)
		}
		insts[in.ID] = i
	}
	return nil
}

// checkElemIdent is checkIdent of field of element i of list; the element's name is
// formatted only for an error, since a request may hold 100,000 of them.
func checkElemIdent(list string, i int, field, s string) error {
	if s != "" && len(s) <= maxIdentLen && plainText(s) {
		return nil
	}
	return checkIdent(fmt.Sprintf("%s[%d].%s", list, i, field), s)
}

// plainText reports, faster than metric.CheckText, that s is valid UTF-8 without a
// control character (a byte below 0x20 or 0x7f is never within a multi-byte rune).
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return utf8.ValidString(s)
}
