//go:build !agentonly

package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/binlake/binlake/wave/cluster"
)

// The advice when add or move finds no live wave, for a cluster (-zk, -config); the
// up folder's is TestInstanceOnUpDataFolder's. Other errors pass unchanged.
func TestNoLiveWaveSaysWhatToDo(t *testing.T) {
	other := errors.New("zookeeper: session expired")
	tests := []struct {
		sub  string
		err  error
		want string
	}{
		{"add", cluster.ErrNoWave,
			"instance add: no live wave to place orders on; start a wave, or give -node with -force to assign to a wave yet to start"},
		{"move", fmt.Errorf("placement: %w", cluster.ErrNoWave),
			"instance move: placement: no live wave to place orders on; start a wave, or give -node with -force to assign to a wave yet to start"},
		{"add", other, other.Error()},
	}
	for _, tt := range tests {
		ic := &instanceCmd{sub: tt.sub}
		if got := ic.noLiveWave(tt.err, "orders").Error(); got != tt.want {
			t.Errorf("%s, %v:\n got %s\nwant %s", tt.sub, tt.err, got, tt.want)
		}
	}
}
