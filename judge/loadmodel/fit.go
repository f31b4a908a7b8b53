package loadmodel

import (
	"math"
	"slices"
)

// sample is one moment of a wave: the CPU its process used and the work it did.
type sample struct {
	rows, bytes, cpu float64
}

// fitResult is a fitted price triple with how well it explains the samples.
type fitResult struct {
	row, byte, base float64
	r2, rmse        float64
	// workErr is the standard error of the fitted cost of the samples' mean work (the
	// prices' part of the mean CPU), as a share of that cost: how well the samples pin
	// the prices down where the wave works.
	workErr float64
	// collinear: rows and bytes moved together across the samples, so the prices were
	// fitted to their combined work and split by their spreads (fitCentred).
	collinear bool
}

// The robust weights. The first rounds use Huber's (residuals within 1.345 robust
// standard deviations weigh fully, larger ones less and less), which always converge
// from the plain least squares start; the later ones Tukey's bisquare (4.685: 95 %
// efficiency on Gaussian noise), which gives a gross outlier no weight at all, so that a
// sample taken during a GC storm, a snapshot or a slow disk does not move the prices.
const (
	huberK    = 1.345
	bisquareC = 4.685
	// Huber's rounds run until the weights settle (the estimate is the unique optimum of a
	// convex loss, a sound start), then the bisquare's refine it.
	huberRounds    = 30
	bisquareRounds = 20
)

// fit finds non-negative prices (cores per row/s, per byte/s, and a base) with
// cpu ≈ row·rows + byte·bytes + base over the samples, by iteratively reweighted least
// squares with Huber's weights, pulled towards prior by a small ridge on the two work
// prices: where the samples pin a price down the prior hardly matters, and where they
// cannot (a wave whose rows and bytes always move together, or barely move) the prior
// fills in the direction the data leaves open instead of an arbitrary split.
//
// strength is the ridge's weight relative to the samples' own (0.01: one hundredth of
// the information in the samples).
func fit(ss []sample, prior [2]float64, strength float64) fitResult {
	return fitWith(ss, prior, strength, false)
}

// fitWith is fit; baseFree lets the base take any sign (a fit of centred samples, whose
// base is a correction around zero, not a cost).
func fitWith(ss []sample, prior [2]float64, strength float64, baseFree bool) fitResult {
	n := len(ss)
	if n == 0 {
		return fitResult{row: prior[0], byte: prior[1]}
	}
	// Scale each regressor by its standard deviation, so that the normal equations stay
	// well conditioned (bytes/s runs 10⁴ times rows/s) and one ridge weight means the
	// same for both: a share of the information the samples' variation carries about
	// each price (their mean is the base's to explain).
	sr, sb := spread(ss, func(s sample) float64 { return s.rows }), spread(ss, func(s sample) float64 { return s.bytes })
	p := [2]float64{prior[0] * sr, prior[1] * sb} // the prior in scaled units
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	var beta [3]float64
	res := make([]float64, n)
	for _, huber := range []bool{true, false} {
		rounds := bisquareRounds
		if huber {
			rounds = huberRounds
		}
		for range rounds {
			beta = solveNonNeg(ss, w, sr, sb, p, strength, baseFree)
			for i, s := range ss {
				res[i] = s.cpu - (beta[0]*s.rows/sr + beta[1]*s.bytes/sb + beta[2])
			}
			scale := mad(res) * 1.4826 // a robust standard deviation of the residuals
			if scale == 0 {
				break // an exact fit: nothing to reweight
			}
			changed := false
			for i, r := range res {
				nw := robustWeight(r/scale, huber)
				if math.Abs(nw-w[i]) > 1e-6 {
					changed = true
				}
				w[i] = nw
			}
			if !changed {
				break
			}
		}
	}
	beta = solveNonNeg(ss, w, sr, sb, p, strength, baseFree)
	out := fitResult{row: beta[0] / sr, byte: beta[1] / sb, base: beta[2]}
	out.r2, out.rmse = explained(ss, out)
	out.workErr = workErr(ss, w, sr, sb, beta)
	return out
}

// workErr is fitResult.workErr of the fit beta (scaled units) with weights w: the
// variance of g·β for g the mean work (in scaled units, no base), σ²·gᵀ(XᵀWX)⁻¹g with σ²
// the weighted residuals' variance. When rows and bytes barely move, or move only
// together, the samples leave the work's price and the base to trade against each other
// (a flatter slope and a higher base fit as well), and this is large: predicting what
// moving an instance off the wave saves, at those prices, is then a guess. +Inf when
// the work costs nothing at these prices.
func workErr(ss []sample, w []float64, sr, sb float64, beta [3]float64) float64 {
	m, _, sw := normalEquations(ss, w, sr, sb)
	var g [3]float64
	var rss float64
	for i, s := range ss {
		x0, x1 := s.rows/sr, s.bytes/sb
		r := s.cpu - (beta[0]*x0 + beta[1]*x1 + beta[2])
		rss += w[i] * r * r
		g[0], g[1] = g[0]+x0, g[1]+x1
	}
	n := float64(len(ss))
	g[0], g[1] = g[0]/n, g[1]/n
	cost := beta[0]*g[0] + beta[1]*g[1]
	if cost <= 0 || sw <= 3 {
		return math.Inf(1)
	}
	h, ok := solveMasked(m, g, [3]bool{true, true, true}) // (XᵀWX)⁻¹g
	if !ok {
		return math.Inf(1)
	}
	v := rss / (sw - 3) * (g[0]*h[0] + g[1]*h[1])
	return math.Sqrt(max(0, v)) / cost
}

// normalEquations are the weighted least squares' XᵀWX and XᵀWy of the samples, with
// rows and bytes scaled by sr and sb and a column of ones for the base, and Σw.
func normalEquations(ss []sample, w []float64, sr, sb float64) (m [3][3]float64, v [3]float64, sw float64) {
	for i, s := range ss {
		x := [3]float64{s.rows / sr, s.bytes / sb, 1}
		for a := range 3 {
			for b := range 3 {
				m[a][b] += w[i] * x[a] * x[b]
			}
			v[a] += w[i] * x[a] * s.cpu
		}
		sw += w[i]
	}
	return m, v, sw
}

// robustWeight is the weight of a residual u robust standard deviations off.
func robustWeight(u float64, huber bool) float64 {
	a := math.Abs(u)
	if huber {
		if a <= huberK {
			return 1
		}
		return huberK / a
	}
	if a >= bisquareC {
		return 0
	}
	t := 1 - (a/bisquareC)*(a/bisquareC)
	return t * t
}

// solveNonNeg solves the weighted, ridge-penalised normal equations in scaled units
// and keeps every price ≥ 0: a negative one is fixed at zero and the rest solved again
// (three unknowns: at most eight active sets, tried from the fullest).
func solveNonNeg(ss []sample, w []float64, sr, sb float64, prior [2]float64, strength float64, baseFree bool) [3]float64 {
	m, v, sw := normalEquations(ss, w, sr, sb)
	// In units of standard deviations each regressor's centred information is about
	// Σw: the ridge is strength times that.
	lambda := strength * sw
	for a := range 2 {
		m[a][a] += lambda
		v[a] += lambda * prior[a]
	}
	// A regressor that is zero in every sample of weight, with no ridge, tells nothing of
	// its price: it is held at the prior rather than leaving the system singular (the
	// pool's fit in one direction, fitCentred, has no second regressor).
	free := [3]bool{true, true, true}
	var untold [2]bool
	for a := range 2 {
		untold[a] = m[a][a] == 0 // no ridge, and the regressor zero throughout
		free[a] = !untold[a]
	}
	for {
		beta, ok := solveMasked(m, v, free)
		for a := range 2 {
			if untold[a] {
				beta[a] = prior[a]
			}
		}
		if !ok {
			// Singular even with the ridge (no samples of weight): the prior, and a base
			// that explains the mean.
			return [3]float64{prior[0], prior[1], 0}
		}
		neg := -1
		for a := range 3 {
			if a == 2 && baseFree {
				continue
			}
			if free[a] && beta[a] < 0 && (neg < 0 || beta[a] < beta[neg]) {
				neg = a
			}
		}
		if neg < 0 {
			return beta
		}
		free[neg] = false
	}
}

// solveMasked solves m·x = v for the free unknowns, the others held at zero, by
// Gaussian elimination with partial pivoting.
func solveMasked(m [3][3]float64, v [3]float64, free [3]bool) ([3]float64, bool) {
	var idx []int
	for a := range 3 {
		if free[a] {
			idx = append(idx, a)
		}
	}
	k := len(idx)
	var out [3]float64
	if k == 0 {
		return out, true
	}
	a := make([][]float64, k)
	for i, r := range idx {
		a[i] = make([]float64, k+1)
		for j, c := range idx {
			a[i][j] = m[r][c]
		}
		a[i][k] = v[r]
	}
	for col := range k {
		piv := col
		for r := col + 1; r < k; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		if math.Abs(a[piv][col]) < 1e-12 {
			return out, false
		}
		a[col], a[piv] = a[piv], a[col]
		for r := range k {
			if r == col {
				continue
			}
			f := a[r][col] / a[col][col]
			for c := col; c <= k; c++ {
				a[r][c] -= f * a[col][c]
			}
		}
	}
	for i, r := range idx {
		out[r] = a[i][k] / a[i][i]
	}
	return out, true
}

// spread is the standard deviation of one regressor over the samples (1 when it does
// not vary, so that scaling by it is harmless).
func spread(ss []sample, get func(sample) float64) float64 {
	if _, sd := meanSD(ss, get); sd > 0 {
		return sd
	}
	return 1
}

// meanSD is the mean and the (population) standard deviation of one regressor over the
// samples, by Welford's running sums.
func meanSD(ss []sample, get func(sample) float64) (mean, sd float64) {
	var m2 float64
	for i, s := range ss {
		x := get(s)
		d := x - mean
		mean += d / float64(i+1)
		m2 += d * (x - mean)
	}
	return mean, math.Sqrt(m2 / float64(len(ss)))
}

// mad is the median absolute deviation from the median.
func mad(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	med := median(s)
	for i, x := range s {
		s[i] = math.Abs(x - med)
	}
	return median(s)
}

// median returns the median of xs, reordering it (quickselect: the fits take it twice
// per round over every sample, and sorting was most of their time).
func median(xs []float64) float64 {
	n := len(xs)
	hi := selectK(xs, n/2)
	if n%2 == 1 {
		return hi
	}
	lo := xs[0] // selectK left the n/2 smallest before index n/2
	for _, x := range xs[1 : n/2] {
		lo = math.Max(lo, x)
	}
	return (lo + hi) / 2
}

// selectK reorders xs so that xs[k] is its k-th smallest value, the smaller ones before
// it, and returns that value (Hoare's selection with a middle pivot).
func selectK(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		pivot := xs[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// explained returns the share of the CPU's variance the prices explain (R²) and the
// root mean square of what they leave.
func explained(ss []sample, f fitResult) (r2, rmse float64) {
	var mean float64
	for _, s := range ss {
		mean += s.cpu
	}
	mean /= float64(len(ss))
	var tot, res float64
	for _, s := range ss {
		d := s.cpu - (f.row*s.rows + f.byte*s.bytes + f.base)
		res += d * d
		tot += (s.cpu - mean) * (s.cpu - mean)
	}
	rmse = math.Sqrt(res / float64(len(ss)))
	if tot == 0 {
		return 0, rmse
	}
	return 1 - res/tot, rmse
}
