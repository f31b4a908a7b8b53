package rowenc

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// This file is the registry of message formats: a subscription names its format
// (cluster.Subscription.Format), NewFormat makes it from the name and the subscription's
// format options, and the Encoder (event.go) and the capture's DDL path ask it for each
// message. The json format is the row message of docs/design.md; the others are the
// messages other captures' consumers already read (format_*.go).

// FormatJSON is the default format: BinLake's own row message (docs/design.md).
const FormatJSON = "json"

// Format turns a row change or a DDL statement into one message value. The values of a
// Format's messages are its own; the keys (AppendKey) are the same for every format, so
// a row's changes stay on one partition in order whatever the format.
//
// A Format must be comparable (a pointer, or a struct of comparable fields): the encoder
// encodes a row once for all the subscriptions whose Formats are equal.
type Format interface {
	// Name is the format's name as subscriptions spell it.
	Name() string
	// AppendRow appends the message of one row change (an insert, update, delete or
	// snapshot row) to dst.
	AppendRow(dst []byte, r *Row) ([]byte, error)
	// AppendDDL appends the message of a DDL statement to dst; ok is false when the
	// format sends nothing for one (its producer puts DDL elsewhere, or nowhere).
	AppendDDL(dst []byte, d *DDL) (out []byte, ok bool, err error)
	// Tombstones reports whether each delete is followed by a tombstone: a message with
	// the delete's key and a null value, for Kafka's log compaction.
	Tombstones() bool
}

// Row is one row change as a Format reads it. Before is nil (IsNil) for an insert or a
// snapshot row, After for a delete.
type Row struct {
	Table *Table
	// Type is TypeInsert, TypeUpdate, TypeDelete or TypeSnapshot.
	Type string
	// Meta is the row's binlog position; Commit and XID are set on a transaction's last
	// row.
	Meta          Meta
	Before, After Image

	// event is the type of the rows event the row is of: TypeUpdate for the delete and
	// the insert an update of the key is split into (indexInEvent); "" in a Row made
	// elsewhere, where Type is.
	event string
	// scratch is what the formats render the row with: the Encoder's, kept from one row
	// to the next; nil in a Row made elsewhere, whose format takes one from a pool.
	scratch *rowScratch
}

// indexInEvent is the row's index among its rows event's rows; 0 for a snapshot's. An
// update event's images come in pairs, also for the delete and the create an update of
// the key is sent as (debezium-json), whose image is one of a pair.
func (r *Row) indexInEvent() int {
	if r.Type == TypeSnapshot {
		return 0
	}
	i := max(r.Before.i, r.After.i, 0)
	if cmp.Or(r.event, r.Type) == TypeUpdate {
		return i / 2
	}
	return i
}

// Image is one image (before or after) of a Row's row: its column values, read one at a
// time in the json format's rendering (AppendJSON), which the other formats rewrite in
// their own conventions. It reads the rows event's images in place, whichever way they
// were decoded.
type Image struct {
	rows *Rows
	t    *Table
	i    int // index in rows; -1: no image
}

// NoImage is the missing image of a Row (the before of an insert, the after of a delete).
var NoImage = Image{i: -1}

// IsNil reports whether there is no image.
func (im Image) IsNil() bool { return im.i < 0 || im.rows == nil }

// AppendJSON appends column col's value as the json format encodes it (docs/design.md,
// "Row message"): null; a JSON number for integers, floats, YEAR and BIT; a JSON string
// for DECIMAL (exact text), text, ENUM, SET ("a,b"), temporal values (ISO 8601 with a 'T',
// the column's fractional digits, a 'Z' on a TIMESTAMP that is not zero), TIME, and
// binary values (base64); a JSON column's document as JSON.
func (im Image) AppendJSON(dst []byte, col int) ([]byte, error) {
	c := &im.t.Columns[col]
	switch r := im.rows; {
	case r.raw != nil:
		return r.raw[im.i].appendValue(dst, c, col)
	case r.query != nil:
		return r.query[im.i].appendValue(dst, c, col)
	default:
		return r.rows[im.i].appendValue(dst, c, col)
	}
}

// isNull reports whether column col is SQL NULL in the image. Its json rendering does
// not say: a JSON column holding the document null renders as null too.
func (im Image) isNull(col int) bool {
	switch r := im.rows; {
	case r.raw != nil:
		return r.raw[im.i].spans[col].n < 0
	case r.query != nil:
		return r.query[im.i][col].Type == mysql.FieldValueTypeNull
	default:
		return r.rows[im.i][col] == nil
	}
}

// isSQLNull reports whether tok, column col's json rendering in im, stands for SQL NULL:
// null, unless it is a JSON column's document null.
func (im Image) isSQLNull(col int, tok []byte) bool {
	return isNullToken(tok) && (kindOf(&im.t.Columns[col]) != kindJSON || im.isNull(col))
}

// Same reports whether column col has the same value in im and o (the json format's
// "old" rule: values compared as decoded, JSON documents by their encoding).
func (im Image) Same(o Image, col int) (bool, error) {
	c := &im.t.Columns[col]
	switch r := im.rows; {
	case r.raw != nil:
		return r.raw[im.i].sameAs(o.rows.raw[o.i], c, col)
	case r.query != nil:
		return r.query[im.i].sameAs(o.rows.query[o.i], c, col)
	default:
		return r.rows[im.i].sameAs(o.rows.rows[o.i], c, col)
	}
}

// DDL is a DDL statement as a Format reads it: the table it changes (one message per
// table a statement names), its position and its text.
type DDL struct {
	Database, Table string
	Meta            Meta
	SQL             string
}

// NewFormatFunc makes a format from a subscription's format options, refusing an unknown
// option or value with an error that names the known ones.
type NewFormatFunc func(opts map[string]string) (Format, error)

var formats = map[string]NewFormatFunc{}

// RegisterFormat adds a format to the registry; each format's file registers itself in
// an init function. A name registered twice is a programming error.
func RegisterFormat(name string, f NewFormatFunc) {
	if _, dup := formats[name]; dup {
		panic("rowenc: format " + name + " registered twice")
	}
	formats[name] = f
}

// FormatNames lists the registered formats, sorted.
func FormatNames() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewFormat makes the format called name ("" is json) with the given options.
func NewFormat(name string, opts map[string]string) (Format, error) {
	if name == "" {
		name = FormatJSON
	}
	f, ok := formats[name]
	if !ok {
		return nil, fmt.Errorf("format %q: unknown; known formats: %s", name, strings.Join(FormatNames(), ", "))
	}
	return f(opts)
}

// FormatOption is one option a format accepts, with its allowed values (the first is
// the default).
type FormatOption struct {
	Name   string
	Values []string
}

// OptionError is a format option a format refuses: Option names it. ParseFormatOptions
// joins one per option refused.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// ParseFormatOptions checks opts against the options format accepts and returns each
// option's value, its default where opts does not set it. Its error names every option
// refused, one *OptionError each, in the options' order (it stopped at the first: five
// wrong options took five runs of --check, an outside trial).
func ParseFormatOptions(format string, opts map[string]string, known []FormatOption) (map[string]string, error) {
	out := make(map[string]string, len(known))
	for _, o := range known {
		out[o.Name] = o.Values[0]
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		refuse := func(format string, args ...any) {
			errs = append(errs, &OptionError{Option: k, Err: fmt.Errorf(format, args...)})
		}
		i := slices.IndexFunc(known, func(o FormatOption) bool { return o.Name == k })
		if i < 0 {
			if len(known) == 0 {
				refuse("format %s: option %q: the format has no options", format, k)
				continue
			}
			names := make([]string, len(known))
			for j, o := range known {
				names[j] = o.Name
			}
			refuse("format %s: option %q: unknown; known options: %s", format, k, strings.Join(names, ", "))
			continue
		}
		if v := opts[k]; !slices.Contains(known[i].Values, v) {
			refuse("format %s: option %s %q: want one of %s", format, k, v, strings.Join(known[i].Values, ", "))
			continue
		}
		out[k] = opts[k]
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// jsonFormat is the json format: EncodeRow's and EncodeDDL's message. The Encoder does
// not call AppendRow for it: it encodes a rows event's shared header once (event.go).
type jsonFormat struct{}

// JSON is the json format.
var JSON Format = jsonFormat{}

func init() {
	RegisterFormat(FormatJSON, func(opts map[string]string) (Format, error) {
		if _, err := ParseFormatOptions(FormatJSON, opts, nil); err != nil {
			return nil, err
		}
		return JSON, nil
	})
}

func (jsonFormat) Name() string     { return FormatJSON }
func (jsonFormat) Tombstones() bool { return false }

func (jsonFormat) AppendRow(dst []byte, r *Row) ([]byte, error) {
	t := r.Table
	dst = appendHeader(dst, t.names, t.Database, t.Name, r.Type, r.Meta)
	rows := r.After.rows
	if rows == nil {
		rows = r.Before.rows
	}
	switch {
	case rows == nil:
		return dst, fmt.Errorf("%s.%s: a row with no image", t.Database, t.Name)
	case rows.raw != nil:
		return encodeRow(dst, t, imageAt(rows.raw, r.Before), imageAt(rows.raw, r.After))
	case rows.query != nil:
		return encodeRow(dst, t, imageAt(rows.query, r.Before), imageAt(rows.query, r.After))
	default:
		return encodeRow(dst, t, imageAt(rows.rows, r.Before), imageAt(rows.rows, r.After))
	}
}

// imageAt is im's row image in images, or the zero (nil) image.
func imageAt[I rowImage[I]](images []I, im Image) I {
	var zero I
	if im.IsNil() {
		return zero
	}
	return images[im.i]
}

func (jsonFormat) AppendDDL(dst []byte, d *DDL) ([]byte, bool, error) {
	return EncodeDDL(dst, d.Database, d.Table, d.Meta, d.SQL), true, nil
}
