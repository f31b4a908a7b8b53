// Package tail shows the row messages a wave published, for `binlake tail`: it decodes
// each message with the format it is in and prints it indented, as one JSON line or as
// a one-line summary. Messages come from a bus.Reader (a Kafka topic, a file sink's
// file); anything that is not a row message is shown as it is, never fatal.
//
// A format plugs in as one Format in formats: its Decode says whether a message is one
// of its own and what row it carries. Auto-detection tries them in order.
package tail

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Row is what a row message says about one change, whatever its format: the fields the
// one-line summary shows.
type Row struct {
	Instance string
	Database string
	Table    string
	// Type is insert, update, delete, snapshot or ddl (wave.Type*).
	Type   string
	TS     int64 // the event's time, Unix seconds
	GTID   string
	File   string
	Pos    uint64
	XID    uint64
	Commit bool
	// PK, Data and Old are JSON objects (PK may be null; Old only for updates).
	PK, Data, Old json.RawMessage
	SQL           string // ddl
	// Grouped are the rows after this one in the same message: canal-protobuf puts the
	// rows of a rows event that go to one partition in one entry, and -o line showed the
	// first alone (an outside trial's 7 rows came as 3 lines).
	Grouped []Row
}

// Format decodes the messages of one wire format.
type Format interface {
	// Name is the format's name in -format (and in a subscription's format).
	Name() string
	// Decode returns the row a message of this format carries and the message as JSON
	// (what -o pretty indents and -o json embeds), or an error saying why value is not
	// a message of this format. It must not panic, whatever value holds.
	Decode(value []byte) (Row, json.RawMessage, error)
}

// formats are the formats the wave writes, in the order auto-detection tries them (each
// refuses the others' messages: peers.go, protobuf.go; the protobuf formats last).
var formats = []Format{rowJSON{}, canalJSON{}, maxwellJSON{}, debeziumJSON{}, rowProto{}, canalProto{}}

// Auto is the -format that tries every format in turn.
const Auto = "auto"

// FormatNames lists the known formats, auto first.
func FormatNames() []string {
	names := []string{Auto}
	for _, f := range formats {
		names = append(names, f.Name())
	}
	return names
}

// CheckFormat reports whether name is Auto or a known format.
func CheckFormat(name string) error {
	if name == Auto {
		return nil
	}
	for _, f := range formats {
		if f.Name() == name {
			return nil
		}
	}
	return fmt.Errorf("format %q: want %s", name, strings.Join(FormatNames(), ", "))
}

// Decoded is a message as the formats understood it.
type Decoded struct {
	// Format is the name of the format that decoded it; "" when none did.
	Format string
	Row    Row
	Doc    json.RawMessage
	// Err says why no format took it (Format is then "").
	Err error
}

// Decode decodes value with the format named, or with the first format that takes it
// for Auto.
func Decode(value []byte, name string) Decoded {
	var why []string
	for _, f := range formats {
		if name != Auto && f.Name() != name {
			continue
		}
		row, doc, err := f.Decode(value)
		if err == nil {
			return Decoded{Format: f.Name(), Row: row, Doc: doc}
		}
		why = append(why, f.Name()+": "+err.Error())
	}
	if len(why) == 0 {
		return Decoded{Err: CheckFormat(name)}
	}
	// The first format's reason (json's, the wave's default) and the others' names: their
	// reasons are that it lacks their own fields. One line, whatever the errors say: the
	// printers show it on one.
	msg := why[0]
	if len(why) > 1 {
		var others []string
		for _, w := range why[1:] {
			n, _, _ := strings.Cut(w, ":")
			others = append(others, n)
		}
		msg += "; nor " + strings.Join(others, ", ")
	}
	return Decoded{Err: errors.New(strings.Join(strings.Fields(msg), " "))}
}
