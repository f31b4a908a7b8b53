package rowenc

import (
	"encoding/hex"
	"testing"
)

// TestFixedText: a MariaDB UUID, INET4 or INET6 value's stored bytes (as the binlog
// carries them) go out as the text MariaDB 10.11 shows for them (each pair checked
// against SELECT v, HEX(v) on the server); bytes of another length stay base64.
func TestFixedText(t *testing.T) {
	for _, c := range []struct {
		f        FixedText
		hexBytes string
		want     string
	}{
		{FixedUUID, "123E4567E89B12D3A456426655440000", `"123e4567-e89b-12d3-a456-426655440000"`},
		{FixedUUID, "9F1C2A3B4D5E4F608A7B0C1D2E3F4A5B", `"9f1c2a3b-4d5e-4f60-8a7b-0c1d2e3f4a5b"`},
		{FixedINET4, "C0A80101", `"192.168.1.1"`},
		{FixedINET4, "0A000000", `"10.0.0.0"`},
		{FixedINET6, "00000000000000000000000000000001", `"::1"`},
		{FixedINET6, "00000000000000000000000000000000", `"::"`},
		{FixedINET6, "00000000000000000000000001020304", `"::1.2.3.4"`},
		{FixedINET6, "00000000000000000000000000000102", `"::102"`},
		{FixedINET6, "00000000000000000000FFFF01020304", `"::ffff:1.2.3.4"`},
		{FixedINET6, "20010DB8000000000000000000000001", `"2001:db8::1"`},
		{FixedINET6, "20010000000000010000000000000001", `"2001:0:0:1::1"`},
		{FixedINET6, "FE800000000000000001000000000001", `"fe80::1:0:0:1"`},
		{FixedINET6, "00010000000000000000000000000008", `"1::8"`},
		{FixedINET6, "00000000000000000000FFFF00000001", `"::ffff:0.0.0.1"`},
		{FixedINET6, "00000000000000000000000100000001", `"::1:0:1"`},
		{FixedUUID, "FF02", `"/wI="`},
		// A snapshot's value: a SELECT gives the text already.
		{FixedUUID, hex.EncodeToString([]byte("123e4567-e89b-12d3-a456-426655440000")), `"123e4567-e89b-12d3-a456-426655440000"`},
		{FixedINET6, hex.EncodeToString([]byte("2001:db8::1")), `"2001:db8::1"`},
	} {
		b, err := hex.DecodeString(c.hexBytes)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendFixedText(nil, c.f, b)); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.f, c.hexBytes, got, c.want)
		}
	}
	// A value the binlog logged without its trailing 0x00 bytes (a BINARY's padding) is
	// padded back first.
	col := Column{Type: 0xfe, Pad: 16, Fixed: FixedUUID}
	b, _ := hex.DecodeString("123E4567E89B12D3A4564266554400")
	if got, _ := appendValue(nil, &col, b); string(got) != `"123e4567-e89b-12d3-a456-426655440000"` {
		t.Errorf("unpadded UUID: %s", got)
	}
	for _, name := range []string{"uuid", "inet4", "inet6"} {
		if f := FixedTextNamed(name); f.String() != name {
			t.Errorf("FixedTextNamed(%q) = %v", name, f)
		}
	}
	if FixedTextNamed("binary") != FixedNone {
		t.Error("binary is no FixedText")
	}
}
