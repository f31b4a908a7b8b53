package wave

import (
	"errors"
	"net"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlake/binlake/internal/bus"
	"github.com/binlake/binlake/wave/capture"
)

// Reasons an instance is not running (or runs but cannot publish: topic_missing,
// publish_failing), as the "reason" label of its state metric: a short,
// fixed set, so that an alert can name the cause without a label per error message. The
// full error is in /status.
const (
	ReasonBinlogOff     = "binlog_off"
	ReasonAccessDenied  = "access_denied"  // a login or privilege the source refused (REPLICATION SLAVE/CLIENT)
	ReasonSecretMissing = "secret_missing" // the password_env variable or password_file is not on this wave's host
	ReasonUnreachable   = "source_unreachable"
	ReasonBinlogPurged  = "binlog_purged"
	// The source has the binlog but cannot send it from the position: a start that is
	// not an event's, a GTID it never wrote.
	ReasonPositionUnserved = "position_unserved"
	ReasonMessageTooLarge  = "message_too_large"
	ReasonStatementDML     = "statement_dml"     // a data change logged as a statement: the source must log binlog_format=ROW
	ReasonRowImagePartial  = "row_image_partial" // rows logged without every column: the source must log binlog_row_image=FULL
	ReasonXAUnreadable     = "xa_unreadable"     // an XA transaction whose rows were not read or could not be held
	// A transaction that wrote a non-transactional table and rolled back (to a savepoint,
	// or whole): the binlog holds the rows undone.
	ReasonRollbackLogged = "rollback_logged"
	ReasonFenced         = "fenced"
	ReasonServerIDClash  = "server_id_clash" // another replica (instance) reads the source with the same server_id
	ReasonBusUnreachable = "bus_unreachable" // the bus (Kafka) did not answer as the instance started
	// The bus answered and refused what the instance's start asked of it (creating its
	// topics: a replication factor above its brokers, no authorization, a topic policy):
	// the wave retries, but the fix is the operator's, in the sink's settings or Kafka's.
	ReasonBusRefused = "bus_refused"
	// Publishing fails while the instance runs (its state stays running): the topic is
	// missing (deleted; the wave creates it again), or the bus refuses or does not answer.
	ReasonTopicMissing   = "topic_missing"
	ReasonPublishFailing = "publish_failing"
	ReasonOther          = "error"
)

// Reason classifies why an instance stopped or retries.
func Reason(err error) string {
	var me *mysql.MyError
	var ne net.Error
	var be *busError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrSecretMissing):
		return ReasonSecretMissing
	case errors.Is(err, capture.ErrBinlogOff):
		return ReasonBinlogOff
	case errors.Is(err, capture.ErrBinlogPurged):
		return ReasonBinlogPurged
	case errors.Is(err, capture.ErrPositionUnserved):
		return ReasonPositionUnserved
	case errors.Is(err, capture.ErrMessageTooLarge):
		return ReasonMessageTooLarge
	case errors.Is(err, capture.ErrStatementDML):
		return ReasonStatementDML
	case errors.Is(err, capture.ErrRowImagePartial):
		return ReasonRowImagePartial
	case errors.Is(err, capture.ErrXAUnreadable):
		return ReasonXAUnreadable
	case errors.Is(err, capture.ErrRollbackLogged):
		return ReasonRollbackLogged
	case errors.Is(err, ErrFenced):
		return ReasonFenced
	case capture.IsServerIDClash(err):
		return ReasonServerIDClash
	case errors.As(err, &be):
		if errors.Is(err, bus.ErrRefused) {
			return ReasonBusRefused
		}
		return ReasonBusUnreachable
	case errors.As(err, &me):
		switch me.Code {
		case mysql.ER_ACCESS_DENIED_ERROR, mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR,
			mysql.ER_DBACCESS_DENIED_ERROR, mysql.ER_TABLEACCESS_DENIED_ERROR:
			return ReasonAccessDenied
		}
	case errors.As(err, &ne):
		return ReasonUnreachable
	}
	return ReasonOther
}

// busError is a failure of the bus as an instance starts (creating its topics): its
// dial errors are net errors too, and were named source_unreachable, which sent an
// operator to MySQL for a Kafka fault.
type busError struct{ err error }

func (e *busError) Error() string { return e.err.Error() }
func (e *busError) Unwrap() error { return e.err }
