package wave

import (
	"context"
	"fmt"
	"time"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// resolveTimeout bounds ResolveStart's reading of the source.
const resolveTimeout = 5 * time.Second

// ResolveStart fixes where a new instance without a start begins, as `binlake instance
// add` stores it: the rows written after the add are captured, however long the waves
// take to connect (a wrong password, a secret not yet on their hosts, the source down).
// With the source's password on this host (password, SourcePassword for the CLI) and the
// source answering, the start is the source's end now, stored as the instance's start;
// else the add's time is stored (AddedAt), and the first wave to connect begins at the
// start of the binlog file the source was writing then (capture.PositionAt). It returns
// a line that says which. An instance with a start is left as it is.
func ResolveStart(ctx context.Context, inst *cluster.Instance, password func(cluster.Source) (config.Secret, error), now time.Time) string {
	if inst.Start != nil {
		return fmt.Sprintf("start: %s, as the definition says", inst.Start)
	}
	pw, err := password(inst.Source)
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		var p cluster.Position
		p, err = capture.CurrentPosition(rctx, inst.Source, pw.Reveal())
		cancel()
		if err == nil {
			p.TS = 0
			inst.Start = &p
			return fmt.Sprintf("start: %s, the source's end now (stored as the instance's start)", p)
		}
	}
	inst.AddedAt = now.Unix()
	return fmt.Sprintf("start: the source could not be read from here (%v); the first wave to connect begins at the start of "+
		"the binlog file the source was writing at %s (up to a minute earlier, for clock skew), so that no row written since is skipped; "+
		"rows written before it in that file come too", err, now.UTC().Format(time.RFC3339))
}
