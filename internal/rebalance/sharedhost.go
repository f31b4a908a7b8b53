package rebalance

import (
	"fmt"
	"slices"
)

// Waves on one host (the same Wave.Host) each measure their load against their share of
// its cores, but the CPU is the host's: a wave over the hard threshold on a host that is
// under it takes from its host-mates' idle cores and starves nothing, and a move from it
// to a host-mate lowers nothing the threshold guards. An outside trial (three waves on one
// 2-core VM, the host loaded by other work to 0.63–0.80 of each share) saw the plans make
// 8 hard_max moves onto the one share then under 0.7, the host's load the same after. So
// the hard threshold holds hosts: a wave is over it when its host is, and a host over it
// receives nothing. The lines and the band still even out the shares; a share over the
// threshold on a host under it is first brought under it by the threshold's steps, off
// its host, as moves of the lines (shareOver): left to the lines' steps alone, a share
// holding one large instance among small ones shed the small ones one by one (the fleet
// simulator's -preset shared, seed 3: 39 moves to the target where one wave to a host
// takes 21).

// hostPeaks is the peak of each shared host's load over its cores (the sums over its
// live waves, at the slot where their sum is highest), by Wave.Host; nil when no two
// live waves share a host.
func hostPeaks(live []*waveState) map[string]float64 {
	var n map[string]int // nil while no wave names its host: the usual fleet, one per host
	for _, w := range live {
		if w.Host != "" {
			if n == nil {
				n = map[string]int{}
			}
			n[w.Host]++
		}
	}
	if n == nil {
		return nil
	}
	var out map[string]float64
	for _, w := range live {
		if n[w.Host] < 2 {
			continue
		}
		if out == nil {
			out = map[string]float64{}
		}
		if _, done := out[w.Host]; done {
			continue
		}
		var load []float64
		cores := 0.0
		for _, m := range live {
			if m.Host != w.Host {
				continue
			}
			cores += m.cap
			if load == nil {
				load = make([]float64, len(m.load))
			}
			for k, l := range m.load {
				load[k] += l
			}
		}
		out[w.Host] = slices.Max(load) / cores
	}
	return out
}

// hardPeak is what the hard threshold holds w to: its host's peak when it shares one
// (hosts: hostPeaks), else its own.
func hardPeak(w *waveState, hosts map[string]float64) float64 {
	if p, ok := hosts[w.Host]; ok && w.Host != "" {
		return p
	}
	return w.peak
}

// hardOver is the live waves over the hard threshold whose host is too, highest
// first, and the waves whose host is under it (the hard threshold's destinations).
func (st *state) hardOver(live []*waveState, hosts map[string]float64) (over, room []*waveState) {
	for _, w := range live {
		switch hp := hardPeak(w, hosts); {
		case hp <= st.goals.HardMax+eps:
			room = append(room, w)
		case w.peak > st.goals.HardMax+eps:
			over = append(over, w)
		}
	}
	slices.SortFunc(over, func(a, b *waveState) int { return -byPeak(a, b) })
	return over, room
}

// hostWhy says why a wave on a shared host over the hard threshold cannot come down
// ("": it shares no host, or other hosts have room that its instances do not fit).
func hostWhy(hot *waveState, hosts map[string]float64, live, room []*waveState) string {
	hp, ok := hosts[hot.Host]
	if !ok || hot.Host == "" {
		return ""
	}
	var mates []string
	for _, w := range live {
		if w != hot && w.Host == hot.Host {
			mates = append(mates, w.Node)
		}
	}
	if len(mates) == len(live)-1 {
		return fmt.Sprintf("its host, shared with %s, is at %.3g and every live wave runs on it: a move between them does not lower it", list(mates), hp)
	}
	if len(room) == 0 {
		return fmt.Sprintf("its host, shared with %s, is at %.3g and no other host is under the threshold", list(mates), hp)
	}
	return ""
}

// shareOver is the highest live wave over the threshold whose host is under it (hosts:
// hostPeaks), but those aside; nil when none.
func shareOver(live []*waveState, hosts map[string]float64, limit float64, aside map[*waveState]bool) *waveState {
	var hot *waveState
	for _, w := range live {
		hp, ok := hosts[w.Host]
		if !ok || w.Host == "" || hp > limit+eps || w.peak <= limit+eps || aside[w] {
			continue
		}
		if hot == nil || byPeak(w, hot) > 0 {
			hot = w
		}
	}
	return hot
}

// offHost is ws without the waves on host.
func offHost(ws []*waveState, host string) []*waveState {
	out := make([]*waveState, 0, len(ws))
	for _, w := range ws {
		if w.Host != host {
			out = append(out, w)
		}
	}
	return out
}
