package fleetsim

import (
	"math"
	"reflect"
	"testing"

	"github.com/binlake/binlake/internal/metric"
)

// TestSharedHosts: with HostShare the waves of each capacity class go two to a host
// (a class's odd one out alone), each host with other work shared equally by its waves;
// the fleet's own draws stay the same (the same waves, instances and rates), and the
// truth counts each wave's part of the other work.
func TestSharedHosts(t *testing.T) {
	o := smallOptions()
	o.Cores = []CoreClass{{2, 3}, {4, 2}, {8, 2}}
	alone, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	o.HostShare, o.HostOther = 2, 0.2
	f, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Instances, alone.Instances) || !reflect.DeepEqual(f.Initial, alone.Initial) {
		t.Error("sharing hosts changed the instances or the start")
	}
	hosts := map[string][]Wave{}
	single := 0
	for w, wave := range f.Waves {
		a := alone.Waves[w]
		if wave.Node != a.Node || wave.Cores != a.Cores || wave.RowPrice != a.RowPrice || wave.Idle != a.Idle {
			t.Errorf("wave %d: %+v, want %+v but for its host", w, wave, a)
		}
		if wave.Host == "" {
			single++
			if wave.Other != 0 {
				t.Errorf("%s alone on its host with other work %v", wave.Node, wave.Other)
			}
			continue
		}
		hosts[wave.Host] = append(hosts[wave.Host], wave)
	}
	if len(hosts) != 3 || single != 1 {
		t.Fatalf("%d shared hosts and %d waves alone, want 3 and the 2-core class's third: %+v", len(hosts), single, f.Waves)
	}
	loaded := 0
	for id, ws := range hosts {
		if len(ws) != 2 || ws[0].Cores != ws[1].Cores || ws[0].Other != ws[1].Other {
			t.Errorf("host %s: %+v, want two waves of one class with equal parts of its other work", id, ws)
		}
		if other := 2 * ws[0].Other / float64(2*ws[0].Cores); other < 0 || other > 2*o.HostOther {
			t.Errorf("host %s: other work %.3f of its cores, want 0–%.1f", id, other, 2*o.HostOther)
		} else if other > 0 {
			loaded++
		}
	}
	if loaded == 0 {
		t.Error("no host has other work")
	}
	for w, l := range loads(f, f.Initial) {
		if d := l.c - loads(alone, alone.Initial)[w].c; math.Abs(d-f.Waves[w].Other) > 1e-12 {
			t.Errorf("%s: its load %.4f over the fleet alone's, want its part of its host's other work %.4f", f.Waves[w].Node, d, f.Waves[w].Other)
		}
	}
}

// TestSharedHostBatch: every agent on a shared host reports the host's cores and CPU
// (its waves' processes and its other work) and the host's boot id; wave.cpu_cores is
// its own process's: on a pegged host what the scheduler gave it (fairShares). A wave on
// a host of its own reports as before, without host.info.
func TestSharedHostBatch(t *testing.T) {
	o := smallOptions()
	o.HostShare, o.HostOther = 2, 0.2
	o.CPUNoise, o.RateJitter = 0, 0
	f, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	s := newState(f, o)
	h := hourOf(o.Now)
	demand := func(w int) float64 {
		d := f.Waves[w].Idle
		for i, a := range s.assign {
			if a == w {
				d += contrib(f.Waves[w], f.Instances[i]).at(h)
			}
		}
		return d
	}
	pegged := 0
	for w, wave := range f.Waves {
		byName, boot := map[string]float64{}, ""
		for _, p := range s.batch(w, o.Now, 0).Points {
			if p.Labels["instance"] == "" {
				byName[p.Name] = p.Value
			}
			if p.Name == metric.HostInfo {
				boot = p.Labels["boot_id"]
			}
		}
		cores, host := float64(wave.Cores), demand(w)
		if wave.Host != "" {
			cores, host = 0, 0
			for _, m := range s.hosts[w] {
				cores += float64(f.Waves[m].Cores)
				host += demand(m) + f.Waves[m].Other
			}
		}
		own, got := demand(w), byName[metric.WaveCPUCores]
		if boot != wave.Host {
			t.Errorf("%s: host.info boot_id %q, want %q", wave.Node, boot, wave.Host)
		}
		if byName[metric.CPUCores] != cores || math.Abs(byName[metric.CPUUtil]-100*min(host, cores)/cores) > 1e-9 {
			t.Errorf("%s: cpu.cores %v cpu.util %v, want %v and %v", wave.Node, byName[metric.CPUCores], byName[metric.CPUUtil], cores, 100*min(host, cores)/cores)
		}
		switch {
		case host <= cores && math.Abs(got-own) > 1e-9:
			t.Errorf("%s: wave.cpu_cores %v on a host with room, want its own process's %v", wave.Node, got, own)
		case host > cores && (got > own+1e-9 || got < min(own, cores/3)-1e-9):
			// Pegged: the process gets what it asks, or at least an equal part of the
			// host among its three programs (its two waves, its other work).
			t.Errorf("%s: wave.cpu_cores %v on a pegged host, want from %v to its own process's %v", wave.Node, got, min(own, cores/3), own)
		}
		if host > cores {
			pegged++
		}
	}
	if pegged == 0 || pegged == len(f.Waves) {
		t.Errorf("%d of %d waves on a pegged host: want some, to test both", pegged, len(f.Waves))
	}
}

// TestFairShares: a pegged host's programs get max-min fair shares of its cores.
func TestFairShares(t *testing.T) {
	for _, tc := range []struct {
		asks  []float64
		cores float64
		want  []float64
	}{
		{[]float64{1, 0.5, 0.2}, 4, []float64{1, 0.5, 0.2}},             // room: all they ask
		{[]float64{3, 1, 0.4}, 4, []float64{2.6, 1, 0.4}},               // the busy one gets the rest
		{[]float64{3, 3, 0.4}, 4, []float64{1.8, 1.8, 0.4}},             // two busy ones share it
		{[]float64{5, 5, 5}, 3, []float64{1, 1, 1}},                     // all busy: equal parts
		{[]float64{0.1, 2, 1.5, 0.3}, 2, []float64{0.1, 0.8, 0.8, 0.3}}, // four programs
	} {
		got := fairShares(tc.asks, tc.cores)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("fairShares(%v, %v) = %v, want %v", tc.asks, tc.cores, got, tc.want)
				break
			}
		}
	}
}
