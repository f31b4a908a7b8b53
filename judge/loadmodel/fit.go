package loadmodel

import (
	"math"
	"slices"
)

// dims is how many kinds of work are priced: rows/s and bytes/s published, and binlog
// bytes/s read (an instance reads its source's whole binlog, every table's events,
// whatever its filters publish).
const dims = 3

// sample is one moment of a wave: the CPU its process used and the work it did.
type sample struct {
	rows, bytes, read, cpu float64
}

// work is the sample's work in the order of a price vector.
func (s sample) work() [dims]float64 { return [dims]float64{s.rows, s.bytes, s.read} }

// costAt is what the sample's work costs at prices p.
func costAt(p [dims]float64, s sample) float64 { return p[0]*s.rows + p[1]*s.bytes + p[2]*s.read }

// fitResult is fitted prices and a base with how well they explain the samples.
type fitResult struct {
	price    [dims]float64
	base     float64
	r2, rmse float64
	// workErr is the standard error of the fitted cost of the samples' mean work (the
	// prices' part of the mean CPU), as a share of that cost: how well the samples pin
	// the prices down where the wave works.
	workErr float64
	// collinear: rows and bytes moved together across the samples, so the prices were
	// fitted to their combined work and split by their spreads (fitCentred).
	collinear bool
	// readCollinear: the binlog read moved with the rows and bytes published across the
	// samples, so reading was priced within publishing (fitCentred).
	readCollinear bool
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

// fit finds non-negative prices (cores per row/s, per byte/s published, per binlog
// byte/s read, and a base) with cpu ≈ row·rows + byte·bytes + read·binlog + base over
// the samples, by iteratively reweighted least squares with Huber's weights, pulled
// towards prior by a small ridge on the work prices: where the samples pin a price down
// the prior hardly matters, and where they cannot (a wave whose rows, bytes and binlog
// always move together, or barely move) the prior fills in the direction the data
// leaves open instead of an arbitrary split.
//
// strength is the ridge's weight relative to the samples' own (0.01: one hundredth of
// the information in the samples).
func fit(ss []sample, prior [dims]float64, strength float64) fitResult {
	return fitWith(ss, prior, strength, false)
}

// scaledX is a sample's regressors in units of their spreads sd, and a 1 for the base.
func scaledX(s sample, sd [dims]float64) [dims + 1]float64 {
	w := s.work()
	var x [dims + 1]float64
	for a := range dims {
		x[a] = w[a] / sd[a]
	}
	x[dims] = 1
	return x
}

// predict is beta's CPU for the scaled regressors x.
func predict(beta, x [dims + 1]float64) float64 {
	var y float64
	for a := range dims + 1 {
		y += beta[a] * x[a]
	}
	return y
}

// fitWith is fit; baseFree lets the base take any sign (a fit of centred samples, whose
// base is a correction around zero, not a cost).
func fitWith(ss []sample, prior [dims]float64, strength float64, baseFree bool) fitResult {
	n := len(ss)
	if n == 0 {
		return fitResult{price: prior}
	}
	// Scale each regressor by its standard deviation, so that the normal equations stay
	// well conditioned (bytes/s runs 10⁴ times rows/s) and one ridge weight means the
	// same for each: a share of the information the samples' variation carries about
	// each price (their mean is the base's to explain).
	sd := spreads(ss)
	var p [dims]float64 // the prior in scaled units
	for a := range dims {
		p[a] = prior[a] * sd[a]
	}
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	var beta [dims + 1]float64
	res := make([]float64, n)
	for _, huber := range []bool{true, false} {
		rounds := bisquareRounds
		if huber {
			rounds = huberRounds
		}
		for range rounds {
			beta = solveNonNeg(ss, w, sd, p, strength, baseFree)
			for i, s := range ss {
				res[i] = s.cpu - predict(beta, scaledX(s, sd))
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
	beta = solveNonNeg(ss, w, sd, p, strength, baseFree)
	out := fitResult{base: beta[dims]}
	for a := range dims {
		out.price[a] = beta[a] / sd[a]
	}
	out.r2, out.rmse = explained(ss, out)
	out.workErr = workErr(ss, w, sd, beta)
	return out
}

// workErr is fitResult.workErr of the fit beta (scaled units) with weights w: the
// variance of g·β for g the mean work (in scaled units, no base), σ²·gᵀ(XᵀWX)⁻¹g with σ²
// the weighted residuals' variance. When the work barely moves, or its kinds move only
// together, the samples leave the work's price and the base to trade against each other
// (a flatter slope and a higher base fit as well), and this is large: predicting what
// moving an instance off the wave saves, at those prices, is then a guess. +Inf when
// the work costs nothing at these prices. A kind of work the samples never show (a
// wave whose agent reports no binlog read) is left out: it has no price to be unsure of.
func workErr(ss []sample, w []float64, sd [dims]float64, beta [dims + 1]float64) float64 {
	m, _, sw := normalEquations(ss, w, sd)
	var g [dims + 1]float64
	var rss float64
	for i, s := range ss {
		x := scaledX(s, sd)
		r := s.cpu - predict(beta, x)
		rss += w[i] * r * r
		for a := range dims {
			g[a] += x[a]
		}
	}
	var free [dims + 1]bool
	params, cost := 0.0, 0.0
	for a := range dims + 1 {
		free[a] = m[a][a] > 0
		if free[a] {
			params++
		}
		if a < dims {
			g[a] /= float64(len(ss))
			cost += beta[a] * g[a]
		}
	}
	if cost <= 0 || sw <= params {
		return math.Inf(1)
	}
	h, ok := solveMasked(m, g, free) // (XᵀWX)⁻¹g
	if !ok {
		return math.Inf(1)
	}
	var gh float64
	for a := range dims {
		gh += g[a] * h[a]
	}
	v := rss / (sw - params) * gh
	return math.Sqrt(max(0, v)) / cost
}

// normalEquations are the weighted least squares' XᵀWX and XᵀWy of the samples, with
// each kind of work scaled by its spread in sd and a column of ones for the base, and Σw.
func normalEquations(ss []sample, w []float64, sd [dims]float64) (m [dims + 1][dims + 1]float64, v [dims + 1]float64, sw float64) {
	for i, s := range ss {
		x := scaledX(s, sd)
		for a := range dims + 1 {
			for b := range dims + 1 {
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
// (four unknowns: each round fixes one more).
func solveNonNeg(ss []sample, w []float64, sd [dims]float64, prior [dims]float64, strength float64, baseFree bool) [dims + 1]float64 {
	m, v, sw := normalEquations(ss, w, sd)
	// In units of standard deviations each regressor's centred information is about
	// Σw: the ridge is strength times that.
	lambda := strength * sw
	for a := range dims {
		m[a][a] += lambda
		v[a] += lambda * prior[a]
	}
	// A regressor that is zero in every sample of weight, with no ridge, tells nothing of
	// its price: it is held at the prior rather than leaving the system singular (the
	// pool's fit in one direction, fitCentred, has no second regressor; a fleet whose
	// agents report no binlog read has no third).
	var free [dims + 1]bool
	var untold [dims]bool
	for a := range dims {
		untold[a] = m[a][a] == 0 // no ridge, and the regressor zero throughout
		free[a] = !untold[a]
	}
	free[dims] = true
	for {
		beta, ok := solveMasked(m, v, free)
		for a := range dims {
			if untold[a] {
				beta[a] = prior[a]
			}
		}
		if !ok {
			// Singular even with the ridge (no samples of weight): the prior, and a base
			// that explains the mean.
			var out [dims + 1]float64
			copy(out[:], prior[:])
			return out
		}
		neg := -1
		for a := range dims + 1 {
			if a == dims && baseFree {
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
func solveMasked(m [dims + 1][dims + 1]float64, v [dims + 1]float64, free [dims + 1]bool) ([dims + 1]float64, bool) {
	var idx []int
	for a := range dims + 1 {
		if free[a] {
			idx = append(idx, a)
		}
	}
	k := len(idx)
	var out [dims + 1]float64
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

// spreads is spread of each kind of work.
func spreads(ss []sample) [dims]float64 {
	var sd [dims]float64
	for a := range dims {
		sd[a] = spread(ss, func(s sample) float64 { return s.work()[a] })
	}
	return sd
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
		d := s.cpu - (costAt(f.price, s) + f.base)
		res += d * d
		tot += (s.cpu - mean) * (s.cpu - mean)
	}
	rmse = math.Sqrt(res / float64(len(ss)))
	if tot == 0 {
		return 0, rmse
	}
	return 1 - res/tot, rmse
}
