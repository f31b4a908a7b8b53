package fleetsim

import (
	"math"
	"slices"
)

// The truth of an assignment: every wave's utilisation (its CPU demand over its cores),
// either at an hour of the day ("now") or at the wave's own peak of the day ("day").

// measure turns a wave's load into cores: at one hour, or the day's peak.
type measure func(load) float64

func atHour(h float64) measure { return func(l load) float64 { return l.at(h) } }

func dayPeak(l load) float64 { return l.peak() }

// Figures summarise the utilisations of a fleet's waves (fractions of their cores).
type Figures struct {
	Peak   float64 `json:"peak"`
	Min    float64 `json:"min"`
	Spread float64 `json:"spread"` // Peak − Min
	// Classes are the capacity classes, smallest first.
	Classes []ClassFigures `json:"classes"`
}

// ClassFigures are one capacity class's mean and highest utilisation.
type ClassFigures struct {
	Cores int     `json:"cores"`
	Waves int     `json:"waves"`
	Mean  float64 `json:"mean"`
	Max   float64 `json:"max"`
}

// loads is every wave's true load under assign (instance → wave index).
func loads(f *Fleet, assign []int) []load {
	ls := make([]load, len(f.Waves))
	for w, wave := range f.Waves {
		ls[w].c = wave.fixed()
	}
	for i, w := range assign {
		ls[w] = ls[w].plus(contrib(f.Waves[w], f.Instances[i]))
	}
	return ls
}

// utils is every wave's utilisation by m.
func utils(f *Fleet, ls []load, m measure) []float64 {
	out := make([]float64, len(ls))
	for w, l := range ls {
		out[w] = m(l) / float64(f.Waves[w].Cores)
	}
	return out
}

// figures summarises utilisations u of f's waves.
func figures(f *Fleet, u []float64) Figures {
	fg := Figures{Peak: math.Inf(-1), Min: math.Inf(1)}
	byCores := map[int]*ClassFigures{}
	for w, v := range u {
		fg.Peak, fg.Min = max(fg.Peak, v), min(fg.Min, v)
		c := f.Waves[w].Cores
		cf := byCores[c]
		if cf == nil {
			cf = &ClassFigures{Cores: c, Max: math.Inf(-1)}
			byCores[c] = cf
		}
		cf.Waves++
		cf.Mean += v
		cf.Max = max(cf.Max, v)
	}
	fg.Spread = fg.Peak - fg.Min
	for _, cf := range byCores {
		cf.Mean /= float64(cf.Waves)
		fg.Classes = append(fg.Classes, *cf)
	}
	slices.SortFunc(fg.Classes, func(a, b ClassFigures) int { return a.Cores - b.Cores })
	return fg
}

// figuresOf is figures of an assignment by m.
func figuresOf(f *Fleet, assign []int, m measure) Figures {
	return figures(f, utils(f, loads(f, assign), m))
}
