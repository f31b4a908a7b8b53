package rowenc

import (
	"math"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestQueryRowValues: values of the binary protocol encode as the binlog's values of the
// same columns do (the integration test compares whole rows against a real server).
func TestQueryRowValues(t *testing.T) {
	str := func(s string) mysql.FieldValue { return mysql.NewFieldValue(mysql.FieldValueTypeString, 0, []byte(s)) }
	for _, tc := range []struct {
		col  Column
		in   mysql.FieldValue
		want string
	}{
		{Column{Type: mysql.MYSQL_TYPE_BIT}, str("\x02\x9a"), "666"},
		{Column{Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 3}, str("2024-01-02 03:04:05.678900"), `"2024-01-02T03:04:05.678"`},
		{Column{Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 6}, str("2024-01-02 03:04:05"), `"2024-01-02T03:04:05.000000"`},
		{Column{Type: mysql.MYSQL_TYPE_DATETIME2, Frac: 3}, str("0000-00-00 00:00:00"), `"0000-00-00T00:00:00.000"`},
		{Column{Type: mysql.MYSQL_TYPE_TIMESTAMP2}, str("1970-01-01 00:00:01"), `"1970-01-01T00:00:01Z"`},
		{Column{Type: mysql.MYSQL_TYPE_TIMESTAMP2}, str("0000-00-00 00:00:00"), `"0000-00-00T00:00:00"`},
		{Column{Type: mysql.MYSQL_TYPE_DATETIME2}, str("garbage"), `"garbage"`},
		{Column{Type: mysql.MYSQL_TYPE_TIME2, Frac: 3}, str("-838:59:59.999000"), `"-838:59:59.999"`},
		{Column{Type: mysql.MYSQL_TYPE_TIME2}, str("12:00:00.500000"), `"12:00:00"`},
		{Column{Type: mysql.MYSQL_TYPE_VARCHAR}, str("ü\""), `"ü\""`},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, Binary: true}, str("\x00\xff"), `"AP8="`},
		{Column{Type: mysql.MYSQL_TYPE_NEWDECIMAL}, str("-0.50"), `"-0.50"`},
		{Column{Type: mysql.MYSQL_TYPE_FLOAT}, mysql.NewFieldValue(mysql.FieldValueTypeFloat, math.Float64bits(float64(float32(3.1415927))), nil), "3.1415927"},
		{Column{Type: mysql.MYSQL_TYPE_DOUBLE}, mysql.NewFieldValue(mysql.FieldValueTypeFloat, math.Float64bits(math.Inf(1)), nil), "null"},
		{Column{Type: mysql.MYSQL_TYPE_LONGLONG, Unsigned: true}, mysql.NewFieldValue(mysql.FieldValueTypeUnsigned, math.MaxUint64, nil), "18446744073709551615"},
		{Column{Type: mysql.MYSQL_TYPE_LONG}, mysql.NewFieldValue(mysql.FieldValueTypeSigned, uint64(math.MaxUint64), nil), "-1"},
		{Column{Type: mysql.MYSQL_TYPE_LONG}, mysql.NewFieldValue(mysql.FieldValueTypeNull, 0, nil), "null"},
	} {
		got, err := QueryRow{tc.in}.appendValue(nil, &tc.col, 0)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%+v: %s, want %s", tc.col, got, tc.want)
		}
	}
}
