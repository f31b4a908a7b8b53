package judge

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"github.com/binlake/binlake/internal/httpapi"
	"github.com/binlake/binlake/judge/remotewrite"
)

// MaxRemoteWriteBytes bounds a POST /api/v1/write body as sent (snappy-compressed);
// remotewrite.Limits bounds it decompressed. Prometheus sends at most 2,000 samples a
// request by default, a few hundred kilobytes.
const MaxRemoteWriteBytes = 16 << 20

// handleRemoteWrite is POST /api/v1/write, Prometheus remote write 1.0: node_exporter's
// series become the canonical metrics of one batch per node and scrape, ingested as an
// agent's would be. Answers: 204 once the store has every point (ingestStored; a
// metadata-only request too, so Prometheus counts no failed send), 400 for a body that
// is not a WriteRequest, and 400 naming the first once the others are stored when the
// judge refuses a node's batch (a sample time ahead of its clock, a value out of range:
// answered 204, such a Prometheus fed nothing and saw no failure, an outside trial;
// Prometheus does not retry a 400, and logs it), 415 for one whose Content-Type names another message (remote
// write 2.0: the sender then falls back to 1.0) or whose encoding is not snappy, 413
// past the limits, 503 while the store buffer is full or when
// the store has not taken the points within 4 s, with Retry-After (Prometheus retries
// 5xx with back-off; recent versions wait the Retry-After).
// A request whose batches were partly ingested before a 503 comes again whole; the judge
// counts what it has seen as late points, as it does an agent's redelivery.
func (j *Judge) handleRemoteWrite(w http.ResponseWriter, r *http.Request) {
	select {
	case j.rwSlots <- struct{}{}:
		defer func() { <-j.rwSlots }()
	case <-time.After(j.rwWait):
		j.writeError(w, r, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeUnavailable,
			"remote write: %d requests are being read; send again later", remoteWriteSlots))
		return
	case <-r.Context().Done():
		return
	}
	j.readBody(w, r, MaxRemoteWriteBytes, sourceRemoteWrite, func(body []byte) { j.remoteWrite(w, r, body) })
}

// A remote-write request is read whole before it is stored, and one at its limits (16
// MiB sent, 32 MiB of samples) took the judge from 170 MB to 680 MB of memory, three at
// once to 1.6 GB (an outside trial): at most remoteWriteSlots are read at a time, and a
// request that finds none free within remoteWriteWait is answered 503 (Prometheus
// retries it). Prometheus's own requests (2,000 samples) take milliseconds.
const (
	remoteWriteSlots = 2
	remoteWriteWait  = 5 * time.Second
)

func (j *Judge) remoteWrite(w http.ResponseWriter, r *http.Request, body []byte) {
	err := remotewrite.CheckContentType(r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding"))
	var req remotewrite.Request
	if err == nil {
		req, err = remotewrite.Decode(body, remotewrite.Limits{})
	}
	if err != nil {
		j.m.decodeErrors.WithLabelValues(sourceRemoteWrite).Inc()
		j.writeError(w, r, err)
		return
	}
	batches, st := j.rw.Map(req)
	j.m.remoteWriteSamples.WithLabelValues("mapped").Add(float64(st.Mapped))
	j.m.remoteWriteSamples.WithLabelValues("raw").Add(float64(st.Raw))
	j.m.remoteWriteSamples.WithLabelValues("dropped").Add(float64(st.Dropped))
	admitted := batches[:0]
	var refused error
	dropped := 0
	for _, b := range batches {
		if err := cmp.Or(b.Validate(), j.admit(b)); err != nil {
			// A node id or label value the contract refuses (control characters, too
			// long), or a value or time the judge does not admit: that batch is dropped
			// and counted, the rest stored.
			err = fmt.Errorf("node %q: %w", b.Node, err)
			j.m.decodeErrors.WithLabelValues(sourceRemoteWrite).Inc()
			j.logDecodeError(sourceRemoteWrite, err)
			refused = cmp.Or(refused, err)
			dropped++
			continue
		}
		admitted = append(admitted, b)
	}
	if err := j.ingestStored(r.Context(), sourceRemoteWrite, admitted...); err != nil {
		j.writeError(w, r, err)
		return
	}
	if refused != nil {
		j.writeError(w, r, invalid("remote write: stored %d batches and refused %d: %v", len(admitted), dropped, refused))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
