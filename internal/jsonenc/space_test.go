package jsonenc

import "testing"

func TestSkipSpace(t *testing.T) {
	tests := []struct {
		in   string
		from int
		want int
	}{
		{"", 0, 0},
		{"x", 0, 0},
		{" \t\n\rx", 0, 4},
		{"a  b", 1, 3},
		{"   ", 1, 3},
		{"\v x", 0, 0}, // vertical tab is not JSON whitespace
		{"a", 1, 1},
	}
	for _, tc := range tests {
		if got := SkipSpace([]byte(tc.in), tc.from); got != tc.want {
			t.Errorf("SkipSpace(%q, %d) = %d, want %d", tc.in, tc.from, got, tc.want)
		}
	}
}
