package judge

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlake/binlake/judge/loadmodel"
)

// A wave's error against its lines is its prices' standard error of what its running
// instances cost (two of it: the 95 % interval), not the scatter of one reading (the
// RMSE), which stands in only where the prices carry no such error.
func TestPlanWaveErrIsThePredictionsError(t *testing.T) {
	running := []instWork{{rows: []float64{1000}, bytes: []float64{2e6}}, {rows: []float64{3000}, bytes: []float64{1e6}}}
	p := loadmodel.Prices{Row: 2e-5, Byte: 5e-9, Base: 0.1, RMSE: 0.04, CostErr: 0.02}
	work := 2e-5*4000 + 5e-9*3e6 // 0.095 cores
	w := planWave(&waveView{node: "w", cores: 4, prices: p}, true, running)
	require.InDelta(t, 2*0.02*work, w.Err, 1e-12)
	p.CostErr = 0
	w = planWave(&waveView{node: "w", cores: 4, prices: p}, true, running)
	require.InDelta(t, 0.04, w.Err, 1e-12)
}
