package keypath

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		key  string
		want string // "" for valid
	}{
		{"waves", ""},
		{"instances/orders/offset", ""},
		{"a-b_c.d/é", ""},
		{"", "empty"},
		{"/abs", "leading slash"},
		{"a/", "trailing slash"},
		{"a//b", "empty segment"},
		{"a/./b", `segment "."`},
		{"../a", `segment ".."`},
		{"a\x00b", "U+0000"},
		{"a\nb", "U+000A"},
		{"bad\xffutf8", "U+FFFD"},
		{strings.Repeat("k", 2000), "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			err := Check(tc.key)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check(%q) = %v, want valid", tc.key, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check(%q) = %v, want an error mentioning %q", tc.key, err, tc.want)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for name, valid := range map[string]bool{"wave-1": true, "host:8080": true, "": false, "a/b": false, "..": false, "x\x7f": false} {
		if err := CheckName(name); (err == nil) != valid {
			t.Errorf("CheckName(%q) = %v, want valid=%v", name, err, valid)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"a", "a/b", "/a", "a//b", "a/..", "\x00", "\xff", "a/b/c/d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if Check(key) != nil {
			return
		}
		// A valid key is a relative path of valid names.
		for _, seg := range strings.Split(key, "/") {
			if err := CheckName(seg); err != nil {
				t.Fatalf("Check(%q) accepted a key with the invalid segment %q: %v", key, seg, err)
			}
		}
	})
}
