package rowenc

import (
	"math/rand/v2"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// datetime2Bytes packs a DATETIME2(dec) as MySQL writes it: the integer part (date and
// clock bit fields) plus its offset in five bytes, then the fraction in (dec+1)/2 bytes,
// each big-endian; the fraction is given as stored (so it may be out of range).
func datetime2Bytes(year, month, day, hour, minute, second int, stored uint64, dec int) []byte {
	ymd := uint64(year*13+month)<<5 | uint64(day)
	v := (ymd<<17|uint64(hour)<<12|uint64(minute)<<6|uint64(second))<<0 + datetimeIntOffset
	b := []byte{byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	for i := (dec+1)/2 - 1; i >= 0; i-- {
		b = append(b, byte(stored>>(8*i)))
	}
	return b
}

// TestPlainDatetime2MatchesTheLongWay: the DATETIME2 text written straight from the
// packed parts is byte for byte the one the time.Time way writes (appendTimeParts of
// datetime2's time), for random values in and out of range (a day past its month, an
// hour 31, a fraction the bytes hold beyond a second); the values it does not take are
// left to the long way, and the in-range ones it takes.
func TestPlainDatetime2MatchesTheLongWay(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	taken := 0
	for range 200_000 {
		dec := r.IntN(7)
		year := 1960 + r.IntN(8200) // some before 1970, some with five digits
		month, day := r.IntN(13), r.IntN(32)
		hour, minute, second := r.IntN(32), r.IntN(64), r.IntN(64)
		if r.IntN(2) == 0 { // half of them valid
			month, day, hour, minute, second = 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60)
		}
		stored := r.Uint64N(1 << (8 * ((dec + 1) / 2)))
		b := datetime2Bytes(year, month, day, hour, minute, second, stored, dec)
		c := &Column{Name: "d", Type: mysql.MYSQL_TYPE_DATETIME2, Frac: uint8(dec)}
		p, ok := plainDatetime2(b, uint8(dec))
		tm, long := datetime2(b, uint8(dec))
		inRange := year >= 1970 && year <= 9999 && month >= 1 && day >= 1 && day <= daysIn(month, year) &&
			hour < 24 && minute < 60 && second < 60 && fracMicros(b[5:], uint8(dec)) < 1_000_000
		if ok != inRange {
			t.Fatalf("%04d-%02d-%02d %02d:%02d:%02d frac %d dec %d: taken %v, in range %v", year, month, day, hour, minute, second, stored, dec, ok, inRange)
		}
		if !ok {
			continue
		}
		taken++
		if !long {
			t.Fatalf("%x: taken straight, but datetime2 hands it over as text", b)
		}
		for _, sep := range []byte{'T', ' '} {
			got, want := string(p.appendText(nil, c, sep)), string(appendTimeParts(nil, c, tm, sep, false))
			if got != want {
				t.Fatalf("%x dec %d: %q straight, %q the long way", b, dec, got, want)
			}
		}
	}
	if taken < 40_000 {
		t.Fatalf("only %d of 200,000 values taken straight", taken)
	}
}

// BenchmarkDatetimeText is a DATETIME(6)'s text from its packed bytes: straight from the
// parts (plainDatetime2), and the long way, through a time.Time (datetime2 and
// appendTimeParts), which the values out of range still take.
func BenchmarkDatetimeText(b *testing.B) {
	v := datetime2Bytes(2026, 12, 1, 10, 11, 12, 123456, 6)
	c := &Column{Name: "d", Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 6}
	var dst []byte
	b.Run("straight", func(b *testing.B) {
		for b.Loop() {
			p, _ := plainDatetime2(v, 6)
			dst = p.appendText(dst[:0], c, 'T')
		}
	})
	b.Run("time.Time", func(b *testing.B) {
		for b.Loop() {
			t, _ := datetime2(v, 6)
			dst = appendTimeParts(dst[:0], c, t, 'T', false)
		}
	})
}
