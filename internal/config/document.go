package config

import (
	"errors"
	"io"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// Document is a file read and parsed once whose parts are decoded strictly one at a
// time (Decode): a part whose keys or types are wrong does not keep the other parts
// from being decoded and checked. The alarm's policy file is read so, one policy at a
// time, and a run reports the problems of every policy at once.
type Document struct {
	name string
	data []byte
	root *yaml.Node
	// schema is a value of the type the whole document decodes into: it lists the keys
	// known where one is not, whichever part is decoded.
	schema any
}

// ReadDocument reads exactly one YAML document from r, as Decode does: a syntax error,
// an empty file or a second document is refused. name is used in errors, usually the
// file's path; schema is a value (a nil pointer will do) of the type the whole document
// decodes into.
func ReadDocument(r io.Reader, name string, schema any) (d *Document, err error) {
	defer recoverParser(name, &err)
	data, root, err := readOne(r, name)
	if err != nil {
		return nil, err
	}
	return &Document{name: name, data: data, root: root, schema: schema}, nil
}

// Top is the document's top node.
func (d *Document) Top() *yaml.Node { return d.root.Content[0] }

// Decode strictly decodes n, a node of the document, into out (a non-nil pointer).
// Every unknown key and every value of the wrong type below n is reported, as Decode
// reports them: *Errors naming the file, the line and the key's dotted path from the
// top of the document, in the file's order. Whatever the errors, out holds what did
// decode: the yaml package goes on past a value it cannot decode.
func (d *Document) Decode(n *yaml.Node, out any) (err error) {
	defer recoverParser(d.name, &err)
	// Node.Decode cannot refuse unknown keys (KnownFields is the Decoder's): the walk
	// that Plugins sections use finds them, and the fractions it would truncate.
	errs := unknownKeys(n, reflect.TypeOf(out))
	if err := n.Decode(out); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return translate(err, d.name, d.data, d.root, d.schema)
		}
		errs = append(errs, te.Errors...)
	}
	if len(errs) == 0 {
		return nil
	}
	return d.Locate(translate(&yaml.TypeError{Errors: errs}, d.name, d.data, d.root, d.schema))
}

// Locate is Locate for the document: err's *FieldErrors (alone or joined) become
// *Errors at the lines of their keys, its *Errors stay, and every one comes in the
// file's order. nil stays nil.
func (d *Document) Locate(err error) error {
	if err == nil {
		return nil
	}
	return locate(d.name, d.root, err)
}
