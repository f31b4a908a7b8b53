package judge

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/binlake/binlake/judge/api"
)

// placementBodies are requests as callers send them and the shapes the fast decoder must
// leave to encoding/json.
var placementBodies = []string{
	`{"instance":"orders","exclude":["wave-2"],"algorithm":"leastload"}`,
	`{"instance":"orders"}`,
	` { "instance" : "orders" , "exclude" : [ "a" , "b" ] , "top" : 7 , "explain" : "all" , "dry_run" : true } `,
	`{"instance":"orders","exclude":[],"dry_run":false,"top":0}`,
	`{"instance":"orders","algorithm":"utilisation","expected":{"bytes_per_s":52341.5}}`,
	`{"instance":"orders","expected":{ "rows_per_s" : 120 , "bytes_per_s" : 4.5e4 }}`,
	`{"instance":"orders","expected":{"rows_per_s":-0.0,"bytes_per_s":1E-3}}`,
	`{"instance":"orders","expected":{"bytes_per_s":52341.5,"binlog_bytes_per_s":52341.5}}`,
	`{"instance":"orders","expected":{"rows_per_s":0,"rows_per_s":-0.0,"bytes_per_s":1E-3}}`,
	`{"instance":"orders","expected":{"binlog_bytes_per_s":1,"bytes_per_s":2,"binlog_bytes_per_s":3}}`,
	`{"instance":"orders","expected":{"binlog_bytes_per_s":"1"}}`, `{"instance":"orders","expected":{"binlog_bytes":1}}`, `{}`, `{"instance":"o","instance":"p"}`, `{"instance":"orders","exclude":["a","a"]}`,
	`{"instance":"orders","top":10}`, `{"instance":"orders","top":01}`, `{"instance":"orders","top":1.0}`,
	`{"instance":"orders","top":1e2}`, `{"instance":"orders","top":-1}`, `{"instance":"orders","top":123456789012}`,
	`{"instance":"orders","exclude":null}`, `{"instance":null}`, `{"instance":"a\"b"}`, `{"instance":"\u00e9"}`,
	`{"instance":"é"}`, `{"instance":"orders","dry_run":"true"}`, `{"instance":"orders","dry_run":truex}`,
	`{"instance":"orders","extra":1}`, `{"Instance":"orders"}`, `{"instance":"orders"} x`, `{"instance":"orders"}{}`,
	`{"instance":"orders",}`, `{"instance":"orders","exclude":["a",]}`, `{"instance":"orders"`, `{"instance":"a\tb"}`,
	`[]`, `null`, ``, ` `, `{"instance":"orders","exclude":"a"}`, `{"instance":"orders","top":true}`,
	`{"instance":"orders","expected":{}}`, `{"instance":"orders","expected":null}`, `{"instance":"orders","expected":{"rows_per_s":null}}`,
	`{"instance":"orders","expected":{"rows_per_s":-5}}`, `{"instance":"orders","expected":{"rows_per_s":1e400}}`,
	`{"instance":"orders","expected":{"rows_per_s":01}}`, `{"instance":"orders","expected":{"rows_per_s":1.}}`,
	`{"instance":"orders","expected":{"rows_per_s":.5}}`, `{"instance":"orders","expected":{"rows_per_s":+1}}`,
	`{"instance":"orders","expected":{"rows_per_s":1e}}`, `{"instance":"orders","expected":{"rows_per_s":"1"}}`,
	`{"instance":"orders","expected":{"rows":1}}`, `{"instance":"orders","expected":{"rows_per_s":1,}}`,
	`{"instance":"orders","expected":[1]}`, `{"instance":"orders","expected":{"rows_per_s":NaN}}`,
	`{"instance":"orders","expected":{"rows_per_s":-}}`, `{"instance":"orders","expected":{"bytes_per_s":1e308}}`,
}

// TestPlacementDecodersAgree: where the fast decoder answers, encoding/json answers the
// same; and the fast decoder answers the requests callers send.
func TestPlacementDecodersAgree(t *testing.T) {
	for _, body := range placementBodies {
		checkDecodersAgree(t, []byte(body))
	}
	for _, body := range placementBodies[:8] {
		if _, ok := decodePlacementFast([]byte(body)); !ok {
			t.Errorf("the fast decoder left %s to encoding/json", body)
		}
	}
}

func checkDecodersAgree(t *testing.T, b []byte) {
	t.Helper()
	fast, ok := decodePlacementFast(b)
	if !ok {
		return
	}
	slow, err := decodePlacementJSON(b)
	if err != nil {
		t.Fatalf("%q: the fast decoder read %+v, encoding/json refuses it: %v", b, fast, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: the fast decoder read %s, encoding/json %s", b, show(fast), show(slow))
	}
}

func show(r api.PlacementRequest) string { return fmt.Sprintf("%#v", r) }

// FuzzPlacementDecoders: the fast decoder never accepts what encoding/json refuses or
// reads it differently.
func FuzzPlacementDecoders(f *testing.F) {
	for _, body := range placementBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodersAgree(t, b) })
}
