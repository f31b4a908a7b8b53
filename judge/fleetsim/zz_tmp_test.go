//go:build !race

package fleetsim

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestZZPerSeed(t *testing.T) {
	var seeds []uint64
	for _, s := range strings.Split(os.Getenv("ZZSEED"), ",") {
		n, _ := strconv.Atoi(s)
		seeds = append(seeds, uint64(n))
	}
	verbose := os.Getenv("ZZV") != ""
	total := 0
	for _, seed := range seeds {
		f, o := seededHetero(t, seed)
		ms, end := planTruly(t, f, o.Now, priceMiss{})
		h, gNow, gDay, j := jointAtEnd(f, ms, end)
		fmt.Printf("seed %d: %d total moves %d offWithin %d offFilled %d least %d descent %d\n", seed, j.JudgeMovesToTarget, len(ms), j.JudgeOffWithin, j.JudgeOffFilled, j.LeastMoves, j.Descent.MovesToTarget)
		total += j.JudgeMovesToTarget
		if !verbose {
			continue
		}
		zzTrace(f, ms, h, gNow, gDay)
	}
	fmt.Println("total", total)
}

func TestZZMissed(t *testing.T) {
	for _, share := range []float64{0.005, 0.01} {
		total, never := 0, 0
		for draw := uint64(1); draw <= 3; draw++ {
			for seed := uint64(1); seed <= 27; seed++ {
				f, o := seededHetero(t, seed)
				ms, end := planTruly(t, f, o.Now, priceMiss{share: share, draw: draw})
				_, _, _, j := jointAtEnd(f, ms, end)
				if j.JudgeMovesToTarget < 0 {
					never++
					fmt.Printf("never: share %g draw %d seed %d\n", share, draw, seed)
					continue
				}
				total += j.JudgeMovesToTarget
			}
		}
		fmt.Printf("share %g: %.1f never %d\n", share, float64(total)/3, never)
	}
}

func TestZZHomo(t *testing.T) {
	o, _ := Preset(os.Getenv("ZZPRESET"))
	f, _ := Generate(o)
	ms, end := planTruly(t, f, o.Now, priceMiss{})
	h, gNow, gDay, j := jointAtEnd(f, ms, end)
	if os.Getenv("ZZV") != "" {
		zzTrace(f, ms, h, gNow, gDay)
	}
	fmt.Printf("%s: %d total moves %d offWithin %d offFilled %d least %d descent %d\n", os.Getenv("ZZPRESET"), j.JudgeMovesToTarget, len(ms), j.JudgeOffWithin, j.JudgeOffFilled, j.LeastMoves, j.Descent.MovesToTarget)
}

func zzTrace(f *Fleet, ms [][2]int, h, gNow, gDay float64) {
	m := jointMeasure(h, TargetFactor*gNow, TargetFactor*gDay)
	assign := slices.Clone(f.Initial)
	ls := loads(f, assign)
	u := utils(f, ls, m)
	for n, mv := range ms {
		i, to := mv[0], mv[1]
		from := assign[i]
		uf, ut := u[from], u[to]
		c := contrib(f.Waves[from], f.Instances[i]).peak() / float64(f.Waves[from].Cores)
		ls[from] = ls[from].minus(contrib(f.Waves[from], f.Instances[i]))
		ls[to] = ls[to].plus(contrib(f.Waves[to], f.Instances[i]))
		u[from] = m(ls[from]) / float64(f.Waves[from].Cores)
		u[to] = m(ls[to]) / float64(f.Waves[to].Cores)
		assign[i] = to
		flag := ""
		if uf <= 1 {
			flag = "WITHIN"
		}
		fmt.Printf("%3d %s(%.3f) w%02d(%d) %.3f->%.3f  w%02d(%d) %.3f->%.3f max %.3f %s\n", n+1, f.Instances[i].ID, c, from, f.Waves[from].Cores, uf, u[from], to, f.Waves[to].Cores, ut, u[to], slices.Max(u), flag)
	}
}
