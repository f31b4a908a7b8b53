package wave

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/binlake/binlake/internal/config"
	"github.com/binlake/binlake/wave/capture"
	"github.com/binlake/binlake/wave/cluster"
)

// ErrServerIDTaken refuses an instance whose server_id the source, or a replica reading
// it, already has: the instance would never hold its binlog connection.
var ErrServerIDTaken = errors.New("the instance's server_id is taken at the source")

// ErrFlavorMismatch refuses an instance whose flavor is not its source's: it would fail
// at every connection (MySQL's @@server_uuid is unknown to MariaDB).
var ErrFlavorMismatch = errors.New("the instance's flavor is not its source's")

// ErrSourceNotRead says the source could not be read from here (no password here, not
// reachable, a login refused): nothing was checked.
var ErrSourceNotRead = errors.New("the source's settings were not checked from here")

// CheckSource reads inst's source from here (with password, SourcePassword for the CLI),
// as instance add does before it stores the instance. A server_id that the source or one
// of its registered replicas has is ErrServerIDTaken; binlog settings that stop the
// instance at the first event they touch (binlog_format, binlog_row_image, log_bin) come
// back as warnings, since a session may log otherwise than the server's default and
// on_unreadable: skip gets past them. So do the privileges the instance's user lacks
// (capture.CheckSource tries them; the waves may log in otherwise). A flavor the server
// does not answer as is ErrFlavorMismatch. A source that cannot be read from here is
// ErrSourceNotRead, for the caller to say: the waves read the source from their own
// hosts.
//
// reading says the instance reads the source under its server_id already (a
// redefinition that keeps it): its own connection is no clash, and no trial dump is
// made under it (it would end that connection).
func CheckSource(ctx context.Context, inst *cluster.Instance, password func(cluster.Source) (config.Secret, error), reading bool) (warnings []string, err error) {
	src := inst.Source
	pw, err := password(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSourceNotRead, err)
	}
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	dumpAs := src.ServerID
	if reading {
		dumpAs = 0
	}
	s, err := capture.CheckSource(rctx, src, pw.Reveal(), dumpAs)
	if err != nil && blankPasswordEnv(src, pw) {
		err = fmt.Errorf("%w (source.password_env names %s, which is set but empty here)", err, src.PasswordEnv)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSourceNotRead, err)
	}
	if f := capture.FlavorOf(s.Version); f != src.Flavor {
		return nil, fmt.Errorf("%w: source.flavor is %s, and %s answers as %s (%s): set flavor: %s (the GTIDs and the server's identity are read otherwise)",
			ErrFlavorMismatch, src.Flavor, src.Addr, f, s.Version, f)
	}
	if taken := s.ServerIDProblems(src.ServerID); len(taken) > 0 && !reading {
		return nil, fmt.Errorf("%w: %s", ErrServerIDTaken, taken[0])
	}
	warnings = append(s.BinlogProblems(), s.Access...)
	if w := snapshotSight(rctx, inst, pw.Reveal()); w != "" && !reading {
		warnings = append(warnings, w)
	} else if len(s.Access) == 0 {
		// With SELECT refused, information_schema shows the user nothing to match.
		warnings = append(warnings, subscriptionSight(rctx, inst, pw.Reveal())...)
	}
	if s.ReplicasErr != nil && !reading {
		warnings = append(warnings, fmt.Sprintf("the source's replicas could not be listed (%v): server_id %d was checked against the source's own only; "+
			"granting user %s REPLICATION MASTER ADMIN (MariaDB 10.5+; MySQL lists them to REPLICATION SLAVE) lets it be checked against theirs",
			s.ReplicasErr, src.ServerID, src.User))
	}
	return warnings, nil
}

// subscriptionSight warns of each subscription that takes no table the source shows the
// instance's user now: a typo in a pattern captured nothing, for ever, without a word
// (an outside trial). A table created later is taken when it is, so it is a warning.
func subscriptionSight(ctx context.Context, inst *cluster.Instance, password string) []string {
	var out []string
	for _, sub := range inst.Subscriptions {
		filter, err := cluster.NewFilter([]cluster.Subscription{sub})
		if err != nil {
			return nil // the definition's own check says why
		}
		tables, err := capture.SubscribedTables(ctx, inst.Source, password, filter)
		if err != nil {
			return nil // listing is a courtesy here: the source check said what it could
		}
		if len(tables) == 0 {
			out = append(out, fmt.Sprintf("subscription %s takes no table user %s sees on %s now (include %s%s): check its patterns; a table created later is taken when it is",
				sub.Name, inst.Source.User, inst.Source.Addr, strings.Join(sub.Include, ", "), excludeNote(sub.Exclude)))
		}
	}
	return out
}

func excludeNote(exclude []string) string {
	if len(exclude) == 0 {
		return ""
	}
	return "; exclude " + strings.Join(exclude, ", ")
}

// snapshotSight warns, for an instance with an initial snapshot, when its user sees no
// table its subscriptions take: the snapshot would list none and be done at once with
// nothing read (a replication user is granted no SELECT). "" when it sees some, or
// takes no snapshot.
func snapshotSight(ctx context.Context, inst *cluster.Instance, password string) string {
	if inst.Snapshot == nil || !inst.Snapshot.Initial {
		return ""
	}
	filter, err := cluster.NewFilter(inst.Subscriptions)
	if err != nil {
		return "" // the definition's own check says why
	}
	tables, err := capture.SubscribedTables(ctx, inst.Source, password, filter)
	switch {
	case err != nil:
		return fmt.Sprintf("snapshot.initial: the subscribed tables could not be listed on %s (%v): the snapshot lists them when the instance first starts", inst.Source.Addr, err)
	case len(tables) == 0:
		return fmt.Sprintf("snapshot.initial: user %s sees no table the subscriptions take on %s, so the initial snapshot would read nothing: grant it SELECT on them (GRANT SELECT ON db.* TO ...), or check the subscriptions' databases and tables",
			inst.Source.User, inst.Source.Addr)
	}
	return ""
}
