package rebalance

import "math"

// Waves set aside. The spread goal sets aside a highest wave that no move can lower
// (one large instance, or pinned or cooling ones) and balances the others among
// themselves. While such a wave stands highest, lowering the others lowers no
// fleet-wide peak: the band among them is worth its moves only while one of them could
// stand, in truth, as high as the wave set aside. On the 200-wave fleet the band went
// on plan after plan among waves 8–11 points under an 8-core wave held at 0.51–0.53 by
// its largest instance: 76 of the 730 moves came after the target, and they raised the
// true peak now (0.405 to 0.424 in one plan) for the second level to take back (67
// moves more). Without them: 599 moves, the peaks 1.067× and 1.017× greedy's (now, by
// the day), against 730 at 1.083× and 1.017×.

// asideErrShare is how many of its errors (Wave.Err over its capacity) a wave's peak
// must stand under the highest wave set aside for the band and the first level to let
// it be: a line from each wave's own error rather than a flat one. A flat line a band
// under a wave held by one large instance left a 2-core wave on the 200-wave fleet at
// 0.578 in truth, predicted under 0.50 (1.16× greedy by the day); at 3 errors the
// fleet's peaks stay where they were (the waves' errors are 0.5–3 points of their
// cores, so the line stands 1.5–10 points under the wave set aside).
const asideErrShare = 3

// underSetAside reports whether every wave of rest stands, by asideErrShare of its
// error, at or under the highest of the waves set aside. A wave whose error is not
// known (Err 0, negative or NaN) is not known to stand under it, and then the band goes
// on as before. Only with a level (Goals.LevelGain): without one, the lowest is raised
// instead.
func (st *state) underSetAside(rest []*waveState, aside map[*waveState]bool) bool {
	if st.goals.LevelGain <= 0 || len(aside) == 0 {
		return false
	}
	top := math.Inf(-1)
	for w := range aside {
		top = max(top, w.peak)
	}
	for _, w := range rest {
		if !(w.Err > 0) || w.peak+asideErrShare*w.Err/w.cap > top+eps {
			return false
		}
	}
	return true
}
