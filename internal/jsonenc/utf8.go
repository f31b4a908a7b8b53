package jsonenc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// InvalidUTF8 is the path ("instances[2].id") of the first name or string of the JSON
// value b whose bytes are not valid UTF-8, and false when all are or b is not valid JSON
// otherwise (its decoder then says what is wrong). encoding/json replaces such bytes with
// U+FFFD, so an id decoded from them is one the client did not send: an API refuses the
// request instead, naming the field.
func InvalidUTF8(b []byte) (string, bool) {
	if utf8.Valid(b) || !json.Valid(b) {
		return "", false // all valid, or its decoder names the fault
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	path, found, err := invalidIn(dec, b, "")
	if err != nil {
		return "", false
	}
	return path, found
}

// invalidIn reads one value from dec, whose path is at, and looks for a name or a
// string whose bytes in b are not valid UTF-8: a token's bytes are those between the
// decoder's offsets before and after it (with separators and space, all ASCII).
func invalidIn(dec *json.Decoder, b []byte, at string) (string, bool, error) {
	from := dec.InputOffset()
	t, err := dec.Token()
	if err != nil {
		return "", false, err
	}
	switch t {
	case json.Delim('{'):
		for dec.More() {
			from := dec.InputOffset()
			k, err := dec.Token()
			if err != nil {
				return "", false, err
			}
			name, _ := k.(string)
			p := name
			if at != "" {
				p = at + "." + name
			}
			if !utf8.Valid(b[from:dec.InputOffset()]) {
				return p, true, nil
			}
			if p, found, err := invalidIn(dec, b, p); found || err != nil {
				return p, found, err
			}
		}
		_, err = dec.Token() // '}'
		return "", false, err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if p, found, err := invalidIn(dec, b, at+"["+strconv.Itoa(i)+"]"); found || err != nil {
				return p, found, err
			}
		}
		_, err = dec.Token() // ']'
		return "", false, err
	}
	if _, ok := t.(string); ok && !utf8.Valid(b[from:dec.InputOffset()]) {
		return at, true, nil
	}
	return "", false, nil
}
