package rowenc

import "testing"

// A column's bytes in its character set come out as the server converts them to UTF-8:
// MySQL's latin1 is Windows-1252 with its five unassigned bytes as C1 controls.
func TestCharsetDecode(t *testing.T) {
	for _, tc := range []struct {
		coll uint64 // the binlog's collation id
		in   string
		want string
	}{
		{8, "caf\xe9\x81", "café\u0081"},           // latin1_swedish_ci
		{47, "\x80\x8d\x9d\xff", "€\u008d\u009dÿ"}, // latin1_bin
		{51, "\xcf\xf0\xe8\xe2\xe5\xf2", "Привет"}, // cp1251_general_ci
		{28, "\xc4\xe3\xba\xc3", "你好"},             // gbk_chinese_ci
		{9, "\xb1", "ą"},                           // latin2_general_ci
		{28, "\xc4", "\ufffd"},                     // a GBK sequence cut short
	} {
		c := CharsetOfCollation(tc.coll)
		if c == nil {
			t.Fatalf("collation %d: no charset", tc.coll)
		}
		if got := string(c.Decode([]byte("x"), []byte(tc.in))); got != "x"+tc.want {
			t.Errorf("collation %d (%s): %q, want %q", tc.coll, c.Name, got, "x"+tc.want)
		}
	}
	// Text that is UTF-8 already, bytes and collations not known here are left alone.
	for _, coll := range []uint64{33, 45, 46, 83, 224, 255, 11, BinaryCollation, 100000} {
		if c := CharsetOfCollation(coll); c != nil {
			t.Errorf("collation %d: charset %s, want none", coll, c.Name)
		}
	}
	if c := CharsetNamed("LATIN1"); c == nil || c.Name != "latin1" {
		t.Errorf("CharsetNamed(LATIN1) = %v", c)
	}
}
