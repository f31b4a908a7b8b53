package jsonenc

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// DuplicateKey is the path ("waves[2].node") of the first name an object of the JSON
// value b gives twice, and false when none does or b is not valid JSON (its decoder
// then says what is wrong). encoding/json keeps the last of two, where other readers
// keep the first (RFC 8259, 4: the behaviour is unpredictable), so an API request that
// gives one twice is refused rather than read one way here and another elsewhere.
func DuplicateKey(b []byte) (string, bool) {
	if bytes.IndexByte(b, ':') < 0 || !json.Valid(b) {
		return "", false // no object has a name, or its decoder names the fault
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	path, found, err := dupIn(dec, "")
	if err != nil {
		return "", false
	}
	return path, found
}

// dupIn reads one value from dec, whose path is at, and looks for a name given twice.
func dupIn(dec *json.Decoder, at string) (string, bool, error) {
	t, err := dec.Token()
	if err != nil {
		return "", false, err
	}
	switch t {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", false, err
			}
			name, _ := k.(string)
			p := name
			if at != "" {
				p = at + "." + name
			}
			if seen[name] {
				return p, true, nil
			}
			seen[name] = true
			if p, found, err := dupIn(dec, p); found || err != nil {
				return p, found, err
			}
		}
		_, err = dec.Token() // '}'
		return "", false, err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if p, found, err := dupIn(dec, at+"["+strconv.Itoa(i)+"]"); found || err != nil {
				return p, found, err
			}
		}
		_, err = dec.Token() // ']'
		return "", false, err
	}
	return "", false, nil
}
