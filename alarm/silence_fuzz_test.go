package alarm

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeSilence: whatever a POST /v1/silences body holds, DecodeSilence returns a
// silence or an ErrInvalidSilence in JSON's words, never a panic; and a silence it
// returns that Validate accepts is one the alarm can store and read back as it was (the
// coordinator keeps silences as JSON: a silence that did not survive that was lost).
func FuzzDecodeSilence(f *testing.F) {
	for _, s := range []string{
		silenceExample,
		`{"matchers":[{"name":"node","value":"a"}],"duration":"2h"}`,
		`{"matchers":[{"name":"node","value":"wave-.*","isRegex":true,"isEqual":false}],"startsAt":"2026-12-04T21:00:00+01:00","endsAt":"2026-12-05T21:00:00Z"}`,
		`{"matchers":[{"name":"node","value":"a"}],"startsAt":"9999-12-31T23:00:00Z","duration":"2h"}`,
		`{"matchers":[{"name":"node","value":"("}],"duration":"1h","isRegex":true}`,
		`{"id":"x","matchers":[],"duration":"-1h"}`, `{"duration":"1h","duration":"2h"}`, `{"endsAt":"tomorrow"}`,
		``, `[]`, `null`, `{"duration":"1h"} {}`, "{\"comment\":\"\xff\"}", `{"matchers":[{"name":"n","value":"a","value":"b"}]}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSilence(bytes.NewReader(data), now)
		if err != nil {
			if !errors.Is(err, ErrInvalidSilence) {
				t.Fatalf("error %v does not say the silence is invalid", err)
			}
			if msg := err.Error(); strings.Contains(msg, "Go value") || strings.Contains(msg, "struct") {
				t.Fatalf("error %q names Go's types, not JSON's", msg)
			}
			return
		}
		if s.ID != "" {
			t.Fatalf("accepted a silence with its own id %q from %q", s.ID, data)
		}
		if s.Validate() != nil {
			return // the handler refuses it with Validate's reason
		}
		stored, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("a valid silence from %q cannot be stored: %v", data, err)
		}
		back, err := DecodeSilence(bytes.NewReader(stored), now)
		if err != nil {
			t.Fatalf("the stored silence %s does not read back: %v", stored, err)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("the stored silence %s reads back invalid: %v", stored, err)
		}
		again, _ := json.Marshal(back)
		if !bytes.Equal(stored, again) || !back.StartsAt.Equal(s.StartsAt) || !back.EndsAt.Equal(s.EndsAt) {
			t.Fatalf("the silence changed through storing: %s, then %s", stored, again)
		}
	})
}
