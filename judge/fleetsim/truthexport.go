package fleetsim

// Truth is the fleet's true costs, in the report when Options.Truth is set, so that a
// plan can be checked offline against what no judge sees: every instance's CPU on every
// wave, and the targets the report holds the judge to. An instance's CPU on wave w at
// UTC hour h is On[w][0] + On[w][1]·cos(2πh/24) + On[w][2]·sin(2πh/24) cores, its daily
// peak On[w][0] + √(On[w][1]² + On[w][2]²); a wave's is its idle process's and its part
// of its host's other work, IdleCores, plus its instances'.
type Truth struct {
	// Hour is the UTC hour of the report's "now" (the last round's), TargetNow and
	// TargetDay the utilisations (CPU over cores) that both targets allow: TargetFactor
	// times the greedy reference's peak now and at the daily peaks.
	Hour      float64     `json:"hour"`
	TargetNow float64     `json:"target_now"`
	TargetDay float64     `json:"target_day"`
	Waves     []TruthWave `json:"waves"`
	Instances []TruthInst `json:"instances"`
}

// TruthWave is one wave's capacity and idle process.
type TruthWave struct {
	Node      string  `json:"node"`
	Cores     int     `json:"cores"`
	IdleCores float64 `json:"idle_cores"`
}

// TruthInst is one instance: the wave it started on (an index into Truth.Waves) and its
// CPU on each wave.
type TruthInst struct {
	ID      string       `json:"id"`
	Initial int          `json:"initial"`
	On      [][3]float64 `json:"on"`
}

// truthOf is f's Truth at hour h with the report's targets.
func truthOf(f *Fleet, h, targetNow, targetDay float64) *Truth {
	t := &Truth{Hour: h, TargetNow: targetNow, TargetDay: targetDay}
	for _, w := range f.Waves {
		t.Waves = append(t.Waves, TruthWave{Node: w.Node, Cores: w.Cores, IdleCores: w.fixed()})
	}
	for i, in := range f.Instances {
		ti := TruthInst{ID: in.ID, Initial: f.Initial[i], On: make([][3]float64, len(f.Waves))}
		for w, wave := range f.Waves {
			l := contrib(wave, in)
			ti.On[w] = [3]float64{l.c, l.x, l.y}
		}
		t.Instances = append(t.Instances, ti)
	}
	return t
}
