package store

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidatePoints(t *testing.T) {
	good := Point{Node: "n1", Name: "cpu", TS: time.Unix(1700000000, 0), Value: 1}
	bad := good
	bad.Value = math.NaN()
	cases := []struct {
		name    string
		points  []Point
		wantErr string // "" when valid
	}{
		{name: "empty batch", points: nil},
		{name: "all valid", points: []Point{good, good}},
		{name: "bad point named by index", points: []Point{good, good, bad}, wantErr: "point 2: "},
		{name: "first bad point wins", points: []Point{bad, good, bad}, wantErr: "point 0: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidatePoints(c.points)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidatePoints: %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidatePoints: nil, want an error starting %q", c.wantErr)
			}
			if !strings.HasPrefix(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "not finite") {
				t.Errorf("ValidatePoints: %q, want it to start %q and name the problem", err, c.wantErr)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("ValidatePoints: %v does not wrap ErrInvalid", err)
			}
		})
	}
}
