package pmw

import (
	"gonum.org/v1/gonum/stat/distuv"

	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// naiveMWEMResult is what the dense reference returns.
type naiveMWEMResult struct {
	nhat    float64
	rows    int64
	weights []float64
	sels    []Selection
}

// naiveMarginal returns the marginal of a over cols (increasing) in
// canonical order (mixed radix over cols, first most significant), by
// decoding every cell.
func naiveMarginal(u *Universe, cols []int, a []float64) []float64 {
	size := 1
	for _, c := range cols {
		size *= u.sizes[c]
	}
	out := make([]float64, size)
	d := make([]int, len(u.sizes))
	for x, v := range a {
		u.Decode(int64(x), d)
		out[naiveIndex(u, cols, d)] += v
	}
	return out
}

func naiveIndex(u *Universe, cols, d []int) int {
	k := 0
	for _, c := range cols {
		k = k*u.sizes[c] + d[c]
	}
	return k
}

// naiveMWEM is a dense textbook reference of [VariantMWEM] with the same
// draws in the same order as Run: every marginal by decoding every cell,
// the model A = N·w/Σw over the universe in its own order, every
// multiplicative update cell by cell. It shares only the public constants
// with the engine (not its pass plan, column order, kernel or tables).
func naiveMWEM(t *testing.T, src dp.Source, u *Universe, fams []Family, hist []Cell, cfg Config) naiveMWEMResult {
	t.Helper()
	d := len(u.sizes)
	var sets [][]int
	find := func(cols []int) int {
		for i, s := range sets {
			if slices.Equal(s, cols) {
				return i
			}
		}
		sets = append(sets, cols)
		return len(sets) - 1
	}
	for c := range d {
		find([]int{c})
	}
	var cand []int
	for _, f := range fams {
		q, err := f.Bind(u)
		if err != nil {
			t.Fatal(err)
		}
		p := q.proj()
		if p == nil {
			continue
		}
		cols := slices.Clone(p.cols)
		slices.Sort(cols)
		if j := find(cols); !slices.Contains(cand, j) {
			cand = append(cand, j)
		}
	}
	j := make([]float64, u.Len())
	var n float64
	for _, h := range hist {
		j[h.Index] += float64(h.Count)
		n += float64(h.Count)
	}
	truth := make([][]float64, len(sets))
	for i, s := range sets {
		truth[i] = naiveMarginal(u, s, j)
	}

	// Budget.
	gauss := cfg.Noise != NoiseLaplace
	share := cfg.NHatShare
	if share == 0 {
		share = DefaultNHatShare
	}
	epsN := share * cfg.Epsilon
	epsR := cfg.Epsilon - epsN
	deltaN, selFrac, total := cfg.Delta, mwemSelFracLaplace, epsR
	if gauss {
		deltaN, selFrac = share*cfg.Delta, mwemSelFracGauss
		rho, err := dp.RhoForBudget(dp.Budget{Epsilon: epsR, Delta: cfg.Delta - deltaN})
		if err != nil {
			t.Fatal(err)
		}
		total = rho
	}
	t0, maxR := cfg.Rounds, cfg.Rounds
	if t0 == 0 {
		t0 = max(mwemMinRounds, mwemRoundsPerCandidate*len(cand))
		maxR = cfg.MaxRounds
		if maxR == 0 {
			maxR = DefaultMWEMMaxRounds
		}
	}
	measFrac := 1 - selFrac
	unit := total / (float64(t0) + measFrac*float64(d))
	initCost := measFrac * float64(d) * unit
	roundsBudget := total - initCost
	sens := cfg.Sensitivity
	noise := func(scale float64) func() int64 {
		if gauss {
			g, err := dp.NewDiscreteGaussian(scale)
			if err != nil {
				t.Fatal(err)
			}
			return func() int64 { return g.Sample(src) }
		}
		l, err := dp.NewDiscreteLaplace(scale)
		if err != nil {
			t.Fatal(err)
		}
		return func() int64 { return l.Sample(src) }
	}
	variance := func(s float64) float64 {
		if gauss {
			return s * s
		}
		return 2 * s * s
	}
	meanAbs := func(s float64) float64 {
		if gauss {
			return math.Sqrt(2/math.Pi) * s
		}
		r := math.Exp(-1 / s)
		return 2 * r / (1 - r*r)
	}
	pad, err := dp.NewTruncatedDiscreteLaplace(epsN, deltaN, int64(math.Ceil(sens)))
	if err != nil {
		t.Fatal(err)
	}
	nhat := n + float64(pad.Sample(src))

	// Measurements: per set, the precision-weighted sums.
	type meas struct {
		set               int
		sum, ybar, target []float64
		prec              float64
	}
	var ms []*meas
	measure := func(set int, scale float64) []float64 {
		draw := noise(scale)
		y := make([]float64, len(truth[set]))
		for c := range y {
			y[c] = truth[set][c] + float64(draw())
		}
		var me *meas
		for _, x := range ms {
			if x.set == set {
				me = x
			}
		}
		if me == nil {
			me = &meas{set: set, sum: make([]float64, len(y)), ybar: make([]float64, len(y)), target: make([]float64, len(y))}
			ms = append(ms, me)
		}
		v := variance(scale)
		me.prec += 1 / v
		for c := range y {
			me.sum[c] += y[c] / v
			me.ybar[c] = me.sum[c] / me.prec
		}
		// Shrink towards the mean cell: λ = max(0, 1 − q·v̄/‖ybar − ȳ‖²)
		// with q the 1 − 1e-4 quantile of χ²_{k−1} and v̄ = 1/prec.
		k := float64(len(y))
		mean := 0.0
		for _, yb := range me.ybar {
			mean += yb
		}
		mean /= k
		ss := 0.0
		for _, yb := range me.ybar {
			ss += (yb - mean) * (yb - mean)
		}
		q := distuv.ChiSquared{K: k - 1}.Quantile(1-1e-4) / me.prec
		lambda := 0.0
		if ss > q {
			lambda = 1 - q/ss
		}
		for c, yb := range me.ybar {
			me.target[c] = mean + lambda*(yb-mean)
		}
		// Keep ybar instead when its SURE (that of its projection onto
		// {x ≥ 0, Σx = Σybar}, found here by bisection on the threshold
		// τ) beats the shrinkage's by √(2(k−1))·v̄.
		vbar := 1 / me.prec
		div := 1.0
		if lambda > 0 {
			div = 1 + (k-1)*lambda + 2*q/ss
		}
		sureShrink := -k*vbar + 2*vbar*div
		for c, yb := range me.ybar {
			sureShrink += (me.target[c] - yb) * (me.target[c] - yb)
		}
		margin := math.Sqrt(2*(k-1)) * vbar
		sureProj := -k * vbar // Σybar ≤ 0: the projection is all zeros
		if total := mean * k; total > 0 {
			hi := math.Inf(-1)
			for _, yb := range me.ybar {
				hi = math.Max(hi, yb)
			}
			lo := hi - total // Σ max(ybar − lo, 0) ≥ total ≥ Σ max(ybar − hi, 0)
			for range 200 {
				tau := (lo + hi) / 2
				var s float64
				for _, yb := range me.ybar {
					s += math.Max(yb-tau, 0)
				}
				if s > total {
					lo = tau
				} else {
					hi = tau
				}
			}
			tau := (lo + hi) / 2
			for _, yb := range me.ybar {
				x := math.Max(yb-tau, 0)
				sureProj += (x - yb) * (x - yb)
				if x > 0 {
					sureProj += 2 * vbar
				}
			}
		} else {
			for _, yb := range me.ybar {
				sureProj += yb * yb
			}
		}
		if sureProj < sureShrink-margin {
			copy(me.target, me.ybar)
		}
		return y
	}
	var sels []Selection
	sel := func(round, set int, scale, cost float64) {
		s := Selection{Round: round, Marginal: "marginal(" + u.colNames(sets[set]) + ")", Columns: sets[set],
			Cells: len(truth[set]), Sigma: scale}
		if gauss {
			s.Rho = cost
		} else {
			s.Epsilon = cost
		}
		sels = append(sels, s)
	}
	// The scales are rounded up as the mechanism rounds them
	// (dp.NoiseScale; TestMWEMNoiseScaleRoundsUp checks the rounding).
	s0 := dp.NoiseScale(mulUp(sens, sqrtUp(float64(d))), sqrtDown(2*initCost))
	if !gauss {
		s0 = dp.NoiseScale(mulUp(sens, float64(d)), initCost)
	}
	var num, den float64
	for c := range d {
		y := measure(c, s0)
		var tot float64
		for _, v := range y {
			tot += v
		}
		num += tot / float64(len(y))
		den += 1 / float64(len(y))
		sel(0, c, s0, initCost/float64(d))
	}
	nEst := num / den
	N := math.Max(nEst, 1)

	// A₀.
	w := make([]float64, u.Len())
	dig := make([]int, d)
	floor := mwemFloor * s0
	p1 := make([][]float64, d)
	for c := range d {
		var sum float64
		for _, y := range ms[c].target {
			sum += math.Max(y, 0) + floor
		}
		for _, y := range ms[c].target {
			p1[c] = append(p1[c], (math.Max(y, 0)+floor)/sum)
		}
	}
	for x := range w {
		u.Decode(int64(x), dig)
		w[x] = float64(u.Len())
		for c := range d {
			w[x] *= p1[c][dig[c]]
		}
	}
	model := func(set int) []float64 {
		var z float64
		for _, v := range w {
			z += v
		}
		a := naiveMarginal(u, sets[set], w)
		for i := range a {
			a[i] *= N / z
		}
		return a
	}
	fit := func(maxSweeps int) {
		cnt := make([]int, d)
		cells := 0
		for _, me := range ms {
			for _, c := range sets[me.set] {
				cnt[c]++
			}
			cells += len(me.ybar)
		}
		beta := make([]float64, len(ms))
		for i, me := range ms {
			mx := 1
			for _, c := range sets[me.set] {
				mx = max(mx, cnt[c])
			}
			beta[i] = 1 / float64(mx)
		}
		loss := func() float64 {
			var l float64
			for _, me := range ms {
				a := model(me.set)
				var s float64
				for c, y := range me.target {
					s += (a[c] - y) * (a[c] - y)
				}
				l += me.prec * s
			}
			return l
		}
		lr := make([][]float64, len(ms))
		step := func(alpha float64) {
			var z float64
			for _, v := range w {
				z += v
			}
			for x := range w {
				u.Decode(int64(x), dig)
				f := float64(u.Len()) / z
				for i, me := range ms {
					f *= math.Exp(alpha * lr[i][naiveIndex(u, sets[me.set], dig)])
				}
				w[x] *= f
			}
		}
		l := loss()
		alpha := 1.0
		for range maxSweeps {
			for i, me := range ms {
				a := model(me.set)
				kappa := 1 / math.Sqrt(me.prec)
				lr[i] = make([]float64, len(a))
				for c, y := range me.target {
					lr[i][c] = beta[i] * (math.Log(math.Max(y, 0)+kappa) - math.Log(a[c]+kappa))
				}
			}
			step(alpha)
			nl := loss()
			for nl > l && alpha > mwemMinAlpha {
				alpha /= 2
				step(-alpha)
				nl = loss()
			}
			if nl > l {
				step(-alpha)
				return
			}
			gain := l - nl
			l = nl
			if gain <= mwemTol*float64(cells) {
				return
			}
			alpha = math.Min(1, 2*alpha)
		}
	}

	// Rounds.
	cost, used := unit, 0.0
	for t := 1; ; t++ {
		rem := roundsBudget - used
		c, last := cost, false
		if cfg.Rounds > 0 {
			if t >= t0 {
				c, last = rem, true
			}
		} else if rem < 2*cost || t >= maxR {
			c, last = rem, true
		}
		scale := dp.NoiseScale(sens, sqrtDown(2*measFrac*c))
		epsSel := math.Sqrt(8 * selFrac * c)
		if !gauss {
			scale, epsSel = dp.NoiseScale(sens, measFrac*c), selFrac*c
		}
		scores := make([]float64, len(cand))
		for i, set := range cand {
			a := model(set)
			var l1 float64
			for k := range a {
				l1 += math.Abs(a[k] - truth[set][k])
			}
			scores[i] = l1 - float64(len(a))*meanAbs(scale)
		}
		// The exact selection (mwem.round); the scores' float error bound
		// is far below Δ̃/8192 here, so errBound 0 gives the same grid.
		set := cand[dp.ExponentialGrid(src, scores, epsSel, sens, 0)]
		before := model(set)
		measure(set, scale)
		fit(mwemRoundSweeps)
		if cfg.Rounds == 0 && !last {
			after := model(set)
			var moved float64
			for k := range after {
				moved += math.Abs(after[k] - before[k])
			}
			if moved <= float64(len(after))*meanAbs(scale) {
				if gauss {
					cost *= 4
				} else {
					cost *= 2
				}
			}
		}
		used += c
		sel(t, set, scale, c)
		if last {
			break
		}
	}
	fit(mwemFinalSweeps)
	x := math.Max(nEst, 0)
	rows := math.Floor(x)
	if dp.Uniform(src) < x-rows {
		rows++
	}
	var z float64
	for _, v := range w {
		z += v
	}
	for i := range w {
		w[i] *= rows / z
	}
	return naiveMWEMResult{nhat: nhat, rows: int64(rows), weights: w, sels: sels}
}

// TestMWEMMatchesNaive compares Run (the default variant) with the dense
// reference under a seeded source: the same n̂, the same selections and
// noise scales round by round, the same row count and the same weights
// (to 1e-6 of the total: the engine sums and multiplies in another order,
// so the fits differ by float rounding). The cases cover Gaussian and
// Laplace noise, adaptive and fixed rounds, every family kind, Δ̃ > 1,
// a universe whose pass order is permuted, and one large enough for two
// workers.
func TestMWEMMatchesNaive(t *testing.T) {
	u, hist := testUniverse(t)
	big, err := NewUniverse([]string{"a", "b", "c", "d"}, []int{20, 10, 19, 18}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var bigHist []Cell
	for range 3000 {
		a, b := rng.IntN(20), rng.IntN(10)
		c := (a + rng.IntN(3)) % 19
		dd := (b*2 + rng.IntN(4)) % 18
		x, _ := big.Index([]int{a, b, c, dd})
		bigHist = append(bigHist, Cell{Index: x, Count: 1 + rng.Int64N(5)})
	}
	allFams := append(testFamilies(),
		Weighted([]int{0}, []int{2}, []float64{0.1, -0.5, 1}),
		Linear([]LinearQuery{{Terms: []Term{{Cell: 3, Value: 1}, {Cell: 17, Value: -0.5}}}}))
	for _, tc := range []struct {
		name string
		u    *Universe
		hist []Cell
		fams []Family
		cfg  Config
	}{
		{"small", u, hist, testFamilies(), Config{Epsilon: 2, Delta: 1e-6, Sensitivity: 2}},
		{"small fixed rounds", u, hist, testFamilies(), Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Rounds: 5}},
		{"small laplace", u, hist, testFamilies(), Config{Epsilon: 3, Delta: 1e-6, Sensitivity: 1, Noise: NoiseLaplace}},
		{"small all families", u, hist, allFams, Config{Epsilon: 5, Delta: 1e-6, Sensitivity: 3, NHatShare: 0.2}},
		{"small capped", u, hist, testFamilies(), Config{Epsilon: 4, Delta: 1e-6, Sensitivity: 1, MaxRounds: 3}},
		{"two workers", big, bigHist, []Family{Marginal([]int{0, 1}), Marginal([]int{2, 3}), Marginal([]int{3}), Marginal([]int{0, 2})},
			Config{Epsilon: 2, Delta: 1e-6, Sensitivity: 1}},
		{"two workers laplace", big, bigHist, []Family{Marginal([]int{1, 3}), Range(2, []int{0})},
			Config{Epsilon: 4, Delta: 1e-6, Sensitivity: 2, Noise: NoiseLaplace, Rounds: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(context.Background(), dp.NewSeededSource(42), tc.u, tc.fams, tc.hist, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			ref := naiveMWEM(t, dp.NewSeededSource(42), tc.u, tc.fams, tc.hist, tc.cfg)
			if res.Variant != VariantMWEM || res.NHat != ref.nhat || res.Rows != ref.rows {
				t.Fatalf("variant %q n̂ = %v rows = %d, reference n̂ = %v rows = %d", res.Variant, res.NHat, res.Rows, ref.nhat, ref.rows)
			}
			if len(res.Selections) != len(ref.sels) || res.Rounds != len(ref.sels)-tc.u.NumColumns() {
				t.Fatalf("%d selections (%d rounds), reference %d", len(res.Selections), res.Rounds, len(ref.sels))
			}
			for i, s := range ref.sels {
				g := res.Selections[i]
				if g.Round != s.Round || g.Marginal != s.Marginal || !slices.Equal(g.Columns, s.Columns) || g.Cells != s.Cells ||
					math.Abs(g.Sigma-s.Sigma) > 1e-12*s.Sigma || math.Abs(g.Rho-s.Rho) > 1e-12*s.Rho || math.Abs(g.Epsilon-s.Epsilon) > 1e-12*s.Epsilon {
					t.Fatalf("selection %d: %+v, reference %+v", i, g, s)
				}
			}
			var sum float64
			for x, v := range res.Weights {
				sum += v
				if math.Abs(v-ref.weights[x]) > 1e-6*float64(ref.rows) {
					t.Fatalf("weight at cell %d = %v, reference %v", x, v, ref.weights[x])
				}
			}
			if math.Abs(sum-float64(res.Rows)) > 1e-9*float64(res.Rows) {
				t.Fatalf("weights sum to %v, want Rows = %d", sum, res.Rows)
			}
			if !res.Seeded || res.Measurements != nil {
				t.Error("seeded source not reported, or per-round noisy values exposed")
			}
			t.Logf("%d rounds: %v", res.Rounds, names(res.Selections[tc.u.NumColumns():]))
		})
	}
}

func names(s []Selection) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.Marginal
	}
	return out
}

// TestScaleKernel checks the scaled pass against brute force on universes
// whose loop nest has 0, 1 and several outer levels, inner projections
// with and without outer columns, factors on a subset of the tables, one
// and three workers: the cells are multiplied by g·Π factors and every
// table equals the marginal of the new cells.
func TestScaleKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		sizes []int
		sets  [][]int
	}{
		{[]int{2, 3}, [][]int{{0}, {1}, {0, 1}, {}}},
		{[]int{3, 4, 5}, [][]int{{0}, {1}, {2}, {0, 2}, {1, 2}, {}}},
		{[]int{7, 3, 5, 2, 9}, [][]int{{0}, {4}, {0, 4}, {1, 3}, {2}, {0, 1, 2}, {3, 4}, {}}},
		{[]int{70, 30, 40}, [][]int{{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}}},
	} {
		names := make([]string, len(tc.sizes))
		for i := range names {
			names[i] = string(rune('a' + i))
		}
		u, err := NewUniverse(names, tc.sizes, 0)
		if err != nil {
			t.Fatal(err)
		}
		var projs []*projection
		for _, s := range tc.sets {
			projs = append(projs, newProjection(u, s))
		}
		pl := newPassPlan(u, projs)
		for _, workers := range []int{1, 3} {
			w := make([]float64, u.Len())
			for i := range w {
				w[i] = rng.Float64()
			}
			fac := make([]float64, pl.tableLen)
			for i := range fac {
				fac[i] = 0.5 + rng.Float64()
			}
			on := make([]bool, len(projs))
			for p := range on {
				on[p] = rng.IntN(3) > 0
			}
			sc := scaleSpec{fac: fac, g: 1.7, on: on}
			for k, p := range pl.innerP {
				if on[p] {
					sc.inner = append(sc.inner, k)
				}
			}
			want := slices.Clone(w)
			d := make([]int, len(tc.sizes))
			for x := range want {
				u.Decode(int64(x), d)
				f := sc.g
				for p, pr := range projs {
					if on[p] {
						f *= fac[pl.tableOff[p]+pr.index(d)]
					}
				}
				want[x] *= f
			}
			scratch := make([][]float64, workers)
			for i := range scratch {
				scratch[i] = make([]float64, pl.tableLen)
			}
			// Force the split over workers even on small universes.
			pl.hierarchy()
			z := pl.parallelN(scratch, workers, func(tab []float64, b0, b1 int64) float64 {
				return pl.scaleKernel(w, tab, &sc, b0, b1)
			})
			var total float64
			for x := range w {
				if math.Abs(w[x]-want[x]) > 1e-12*want[x] {
					t.Fatalf("sizes %v: cell %d = %v, want %v", tc.sizes, x, w[x], want[x])
				}
				total += want[x]
			}
			if math.Abs(z-total) > 1e-9*total {
				t.Fatalf("sizes %v: sum %v, want %v", tc.sizes, z, total)
			}
			for p, pr := range projs {
				m := make([]float64, pr.size)
				for x, v := range want {
					u.Decode(int64(x), d)
					m[pr.index(d)] += v
				}
				for c, v := range m {
					if g := scratch[0][pl.tableOff[p]+c]; math.Abs(g-v) > 1e-9*math.Max(v, 1) {
						t.Fatalf("sizes %v, workers %d: table %v cell %d = %v, want %v", tc.sizes, workers, tc.sets[p], c, g, v)
					}
				}
			}
		}
	}
}

// TestUnpermute checks the pass order and its inverse: a vector laid out
// in the permuted order comes back in the universe's.
func TestUnpermute(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b", "c", "d"}, []int{3, 4, 2, 5}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Uses: a 1, b 3, c 3, d 3. The block takes a (least used), then the
	// largest of the next, d (3·5 = 15), then b (60 ≥ 32); c shares a set
	// with b and d, so it comes first.
	perm, block := passOrder(u.sizes, [][]int{{0}, {1}, {2}, {3}, {1, 2}, {2, 3}, {1, 3}})
	if !slices.Equal(perm, []int{2, 0, 1, 3}) || block != 60 {
		t.Fatalf("passOrder = %v, block %d; want [2 0 1 3], 60", perm, block)
	}
	names, sizes := make([]string, 4), make([]int, 4)
	for i, c := range perm {
		names[i], sizes[i] = u.names[c], u.sizes[c]
	}
	iu, _ := NewUniverse(names, sizes, 0)
	w := make([]float64, u.Len())
	d, id := make([]int, 4), make([]int, 4)
	for x := range w {
		iu.Decode(int64(x), id)
		for i, c := range perm {
			d[c] = id[i]
		}
		orig, _ := u.Index(d)
		w[x] = float64(orig)
	}
	for x, v := range unpermute(u, perm, w) {
		if v != float64(x) {
			t.Fatalf("cell %d holds %v", x, v)
		}
	}
}

// TestMWEMBudget checks the budget arithmetic of the default variant
// against the ledger: n̂'s (s·ε, s·δ) plus the zCDP share ((1−s)ε,
// (1−s)δ) add up to exactly (ε, δ); inside, ρ = RhoForBudget of that share
// converts back to at most (1−s)ε; the parts (initial marginals,
// selections, measurements) add up to ρ; and, round by round, the ρ_t
// that Run reports add up to the ρ of the rounds, each σ_t is
// Δ̃/√(2·0.9·ρ_t) and the initial σ₀ is Δ̃·√d/√(2ρ₀). Then the same for
// Laplace noise in pure ε, with n̂ taking the whole δ, and for fixed
// rounds (every round the same cost).
func TestMWEMBudget(t *testing.T) {
	u, hist := testUniverse(t)
	const eps, delta, sens = 2.0, 1e-6, 3.0
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"gaussian adaptive", Config{}},
		{"gaussian fixed", Config{Rounds: 6}},
		{"gaussian share 0.3", Config{NHatShare: 0.3}},
		{"laplace adaptive", Config{Noise: NoiseLaplace}},
		{"laplace fixed", Config{Noise: NoiseLaplace, Rounds: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := dp.NewLedger(dp.Budget{Epsilon: eps, Delta: delta})
			if err != nil {
				t.Fatal(err)
			}
			cfg := tc.cfg
			cfg.Epsilon, cfg.Delta, cfg.Sensitivity, cfg.Ledger = eps, delta, sens, l
			res, err := Run(context.Background(), dp.NewSeededSource(9), u, testFamilies(), hist, cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.nhatShare()
			gauss := cfg.Noise != NoiseLaplace
			spends := l.Spends()
			if len(spends) != 2 {
				t.Fatalf("%d top-level spends, want 2 (n̂ and the rounds)", len(spends))
			}
			var sumE, sumD float64
			for _, sp := range spends {
				sumE += sp.Epsilon
				sumD += sp.Delta
				if sp.Rule == "" {
					t.Errorf("%s: no rule", sp.Mechanism)
				}
			}
			if math.Abs(sumE-eps) > 1e-15*eps || math.Abs(sumD-delta) > 1e-15*delta {
				t.Fatalf("charged (%v, %v), want (%v, %v)", sumE, sumD, eps, delta)
			}
			if rem := l.Remaining(); rem.Epsilon > 1e-12 || rem.Delta > 1e-21 {
				t.Fatalf("left %+v", rem)
			}
			nh := spends[0]
			wantND := s * delta
			if !gauss {
				wantND = delta
			}
			if math.Abs(nh.Epsilon-s*eps) > 1e-15 || math.Abs(nh.Delta-wantND) > 1e-21 {
				t.Fatalf("n̂ charged (%v, %v), want (%v, %v)", nh.Epsilon, nh.Delta, s*eps, wantND)
			}
			parts := spends[1].Parts
			if len(parts) != 3 {
				t.Fatalf("%d parts in the rounds' share, want 3", len(parts))
			}
			d := float64(u.NumColumns())
			var initCost, roundCost float64
			for _, sel := range res.Selections {
				c := sel.Rho
				if !gauss {
					c = sel.Epsilon
				}
				if sel.Round == 0 {
					initCost += c
				} else {
					roundCost += c
				}
			}
			if gauss {
				rhoR := spends[1]
				rho, _ := dp.RhoForBudget(dp.Budget{Epsilon: rhoR.Epsilon, Delta: rhoR.Delta})
				if e, _ := dp.RhoToEpsilon(rho, rhoR.Delta); e > rhoR.Epsilon*(1+1e-12) {
					t.Fatalf("ρ = %v converts to ε = %v > %v", rho, e, rhoR.Epsilon)
				}
				var sum float64
				for _, p := range parts {
					sum += p.Rho
				}
				if math.Abs(sum-rho) > 1e-12*rho {
					t.Fatalf("parts add to ρ = %v, want %v", sum, rho)
				}
				if math.Abs(parts[0].Rho-initCost) > 1e-12*rho || math.Abs(parts[1].Rho+parts[2].Rho-roundCost) > 1e-12*rho {
					t.Fatalf("charged init %v rounds %v; the run spent %v and %v", parts[0].Rho, parts[1].Rho+parts[2].Rho, initCost, roundCost)
				}
				if math.Abs(parts[1].Rho-0.1*roundCost) > 1e-12*rho {
					t.Fatalf("selections charged %v, want 0.1 of the rounds' %v", parts[1].Rho, roundCost)
				}
			} else {
				var sum float64
				for _, p := range parts {
					sum += p.Epsilon
					if p.Delta != 0 {
						t.Fatalf("%s charged δ = %v in pure ε-DP", p.Mechanism, p.Delta)
					}
				}
				if math.Abs(sum-(1-s)*eps) > 1e-12 || math.Abs(parts[0].Epsilon-initCost) > 1e-12 ||
					math.Abs(parts[1].Epsilon+parts[2].Epsilon-roundCost) > 1e-12 {
					t.Fatalf("parts %v, %v, %v; the run spent init %v rounds %v", parts[0].Epsilon, parts[1].Epsilon, parts[2].Epsilon, initCost, roundCost)
				}
			}
			for _, sel := range res.Selections {
				var want float64
				switch {
				case sel.Round == 0 && gauss:
					want = sens * math.Sqrt(d) / math.Sqrt(2*initCost)
				case sel.Round == 0:
					want = sens * d / initCost
				case gauss:
					want = sens / math.Sqrt(2*0.9*sel.Rho)
				default:
					want = sens / (0.75 * sel.Epsilon)
				}
				if math.Abs(sel.Sigma-want) > 1e-12*want {
					t.Fatalf("round %d: noise %v, want %v for its share", sel.Round, sel.Sigma, want)
				}
				if cfg.Rounds > 0 && sel.Round > 0 {
					c := sel.Rho + sel.Epsilon
					if math.Abs(c-roundCost/float64(cfg.Rounds)) > 1e-9*c {
						t.Fatalf("fixed rounds: round %d costs %v, want %v", sel.Round, c, roundCost/float64(cfg.Rounds))
					}
				}
			}
			if cfg.Rounds > 0 && res.Rounds != cfg.Rounds {
				t.Fatalf("%d rounds, want %d", res.Rounds, cfg.Rounds)
			}
			// Published: n̂, the rows and T, all integers.
			outs := l.Outputs()
			floored := 0.0
			if res.RowsFloored {
				floored = 1
			}
			want := map[string]float64{"n_hat": res.NHat, "pmw_rows": float64(res.Rows), "pmw_rounds": float64(res.Rounds), "pmw_rows_floored": floored}
			if len(outs) != len(want) {
				t.Fatalf("published %v, want %v", outs, want)
			}
			for _, o := range outs {
				if v, ok := want[o.Name]; !ok || v != o.Value || o.Value != math.Trunc(o.Value) {
					t.Fatalf("published %s = %v, want the integer %v", o.Name, o.Value, v)
				}
			}
			if res.NHat < 2000 {
				t.Fatalf("n̂ = %v below |J| = 2000", res.NHat)
			}
			// Nothing remains: a second run is refused before any charge.
			assertRefusedRun(t, l, 2, u, hist, cfg)
		})
	}
}

// TestMWEMNoiseScale draws the initial 1-way marginals many times and
// checks that the noise has the variance the budget says (σ₀² with
// Δ̃ = 4), and that the mutation knobs shrink it as documented:
// testNoiseSens1 by Δ̃², testWholeBudget to the variance of the whole ρ,
// testRhoFromEps by ρ/ε_R.
// Bounds: 6 standard errors of the sample variance (false failure < 1e-8).
func TestMWEMNoiseScale(t *testing.T) {
	u, hist := testUniverse(t)
	base := Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 4, testExactN: true}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want func(m *mwem) float64 // σ
	}{
		{"honest", func(*Config) {}, func(m *mwem) float64 {
			return 4 * math.Sqrt(3) / math.Sqrt(2*m.initCost)
		}},
		{"noise scaled by 1", func(c *Config) { c.testNoiseSens1 = true }, func(m *mwem) float64 {
			return math.Sqrt(3) / math.Sqrt(2*m.initCost)
		}},
		{"whole budget", func(c *Config) { c.testWholeBudget = true }, func(m *mwem) float64 {
			return 4 * math.Sqrt(3) / math.Sqrt(2*m.total)
		}},
		{"ρ taken to be ε", func(c *Config) { c.testRhoFromEps = true }, func(m *mwem) float64 {
			return 4 * math.Sqrt(3) / math.Sqrt(2*m.initCost*m.epsR/m.total)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mod(&cfg)
			src := dp.NewSeededSource(77)
			const R = 400
			var ss float64
			var k int
			var sigma float64
			for range R {
				m, err := newMWEM(src, u, testFamilies(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.init(hist); err != nil {
					t.Fatal(err)
				}
				sigma = tc.want(m)
				if got := m.initScale(); math.Abs(got-sigma) > 1e-12*sigma {
					t.Fatalf("initScale = %v, want %v", got, sigma)
				}
				for _, p := range m.oneWay {
					me := m.measOf[p]
					off := m.plan.tableOff[p]
					for c, y := range me.ybar {
						e := y - m.truth[off+c]
						ss += e * e
						k++
					}
				}
			}
			v := ss / float64(k)
			// Var of the sample variance of a (near) normal: 2σ⁴/k.
			if se := math.Sqrt(2/float64(k)) * sigma * sigma; math.Abs(v-sigma*sigma) > 6*se {
				t.Fatalf("noise variance %v, want σ² = %v ± %v", v, sigma*sigma, 6*se)
			}
		})
	}
}

// TestMWEMRowsUnbiased runs the default variant many times on a small
// histogram with Δ̃ = 5 and checks that Rows is an unbiased estimate of
// |J| = 2000 (mean within 5.5 standard errors: false failure < 1e-7),
// that the weights sum to Rows, and that n̂ ≥ |J| every time.
func TestMWEMRowsUnbiased(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	u, hist := testUniverse(t)
	cfg := Config{Epsilon: 0.5, Delta: 1e-6, Sensitivity: 5, Workers: 1}
	src := dp.NewSeededSource(5)
	const R = 1500
	var sum, sum2 float64
	for range R {
		res, err := Run(context.Background(), src, u, testFamilies(), hist, cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := float64(res.Rows)
		sum += r
		sum2 += r * r
		var ws float64
		for _, v := range res.Weights {
			ws += v
		}
		if math.Abs(ws-r) > 1e-9*math.Max(r, 1) || res.NHat < 2000 {
			t.Fatalf("weights sum %v, Rows %v, n̂ %v", ws, r, res.NHat)
		}
	}
	mean := sum / R
	sd := math.Sqrt(sum2/R - mean*mean)
	if se := sd / math.Sqrt(R); math.Abs(mean-2000) > 5.5*se {
		t.Fatalf("mean Rows %v, want 2000 ± %v (sd %v)", mean, 5.5*se, sd)
	}
	t.Logf("Rows: mean %.1f, sd %.1f over %d runs", mean, sd, R)
}

// TestShrink: a noisy table whose spread is pure noise (5 cells of 1,000
// rows, σ = 100) falls back to its mean (uniform) in most draws and its
// target's mean squared error stays near the mean's own (v = σ²): SURE
// keeps ybar only when χ²_4 > 8 + √8 ≈ 10.8, about 3% of draws, precisely
// the draws with the most noise, so the mean error is about 1.4v; over
// 2,000 draws at least 93% must be uniform (the binomial's mean is 97%,
// its sd 0.4%) and the error below 3v (the estimate's sd is under 0.1v).
// A table whose spread is far above the noise keeps it within 1%.
func TestShrink(t *testing.T) {
	src := dp.NewSource()
	const sigma = 100.0
	g, err := dp.NewDiscreteGaussian(sigma)
	if err != nil {
		t.Fatal(err)
	}
	uniform := 0
	var mse float64
	const draws = 2000
	for range draws {
		me := &mwemMeas{ybar: make([]float64, 5), target: make([]float64, 5), prec: 1 / (sigma * sigma)}
		for c := range me.ybar {
			me.ybar[c] = 1000 + float64(g.Sample(src))
		}
		me.shrink()
		if me.target[0] == me.target[1] && me.target[1] == me.target[4] {
			uniform++
		}
		for _, x := range me.target {
			mse += (x - 1000) * (x - 1000) / draws
		}
	}
	t.Logf("pure noise: uniform in %d of %d draws, mean squared error %.2f v", uniform, draws, mse/(sigma*sigma))
	if uniform < draws*93/100 {
		t.Errorf("pure noise shrunk to uniform in %d of %d draws, want ≥ 93%%", uniform, draws)
	}
	if mse > 3*sigma*sigma {
		t.Errorf("pure noise: target's mean squared error %.2f v, want < 3v", mse/(sigma*sigma))
	}
	me := &mwemMeas{ybar: []float64{100, 5000, 20000, 300, 9000}, target: make([]float64, 5), prec: 1 / (sigma * sigma)}
	me.shrink()
	for c, y := range me.ybar {
		if math.Abs(me.target[c]-y) > 0.01*math.Abs(y-6880) {
			t.Errorf("strong signal: cell %d target %v, ybar %v", c, me.target[c], y)
		}
	}
}

// TestShrinkSparse: a sparse table under heavy noise (1,000 rows in 2 of
// 10 cells, σ = 100 per cell) is not flattened: shrink keeps ybar, whose
// squared error is k·σ² = 10⁵ on average, where the shrinkage alone (λ ≈
// 0.2 here) leaves about 2.4·10⁵. Over 500 draws the mean squared error of
// target must be below 0.6 of the shrinkage's (measured: 0.44; a
// shrink that ignores SURE fails with a ratio of 1), and simplexProject's
// output must be a non-negative table of ybar's total.
func TestShrinkSparse(t *testing.T) {
	src := dp.NewSource()
	const sigma = 100.0
	g, err := dp.NewDiscreteGaussian(sigma)
	if err != nil {
		t.Fatal(err)
	}
	truth := []float64{500, 500, 0, 0, 0, 0, 0, 0, 0, 0}
	var errTarget, errShrink float64
	const draws = 500
	for range draws {
		me := &mwemMeas{ybar: make([]float64, len(truth)), target: make([]float64, len(truth)), prec: 1 / (sigma * sigma)}
		var tot float64
		for c := range me.ybar {
			me.ybar[c] = truth[c] + float64(g.Sample(src))
			tot += me.ybar[c]
		}
		me.shrink()
		var mean, ss float64
		for _, y := range me.ybar {
			mean += y / float64(len(truth))
		}
		for _, y := range me.ybar {
			ss += (y - mean) * (y - mean)
		}
		lambda := math.Max(0, 1-ShrinkQuantile(len(truth))*sigma*sigma/ss)
		for c, y := range me.ybar {
			errTarget += (me.target[c] - truth[c]) * (me.target[c] - truth[c]) / draws
			sh := mean + lambda*(y-mean)
			errShrink += (sh - truth[c]) * (sh - truth[c]) / draws
		}
		proj, support := simplexProject(me.ybar)
		var ptot float64
		pos := 0
		for _, x := range proj {
			if x < 0 {
				t.Fatalf("projection %v has a negative cell", proj)
			}
			if x > 0 {
				pos++
			}
			ptot += x
		}
		if tot > 0 && (math.Abs(ptot-tot) > 1e-6*tot || pos != support) {
			t.Fatalf("projection of %v: total %v (want %v), support %d (counted %d)", me.ybar, ptot, tot, support, pos)
		}
	}
	t.Logf("mean squared error: target %.0f, shrinkage alone %.0f", errTarget, errShrink)
	if errTarget > 0.6*errShrink {
		t.Errorf("sparse table: target's mean squared error %.0f, want < 0.6 × the shrinkage's %.0f", errTarget, errShrink)
	}
}

// TestSimplexProject against a brute-force check of the KKT conditions:
// x = max(y − τ, 0) with Σx = Σy, on small hand cases.
func TestSimplexProject(t *testing.T) {
	for _, c := range []struct {
		y, want []float64
	}{
		{[]float64{3, 1, -1}, []float64{2.5, 0.5, 0}},
		{[]float64{5, -2, -2}, []float64{1, 0, 0}},
		{[]float64{1, 1, 1}, []float64{1, 1, 1}},
		{[]float64{-1, -1}, []float64{0, 0}},
	} {
		got, _ := simplexProject(c.y)
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("simplexProject(%v) = %v, want %v", c.y, got, c.want)
				break
			}
		}
	}
}

// TestMWEMRowsFloor: when the row estimate's noise swamps |J| (10 join
// tuples, Δ̃ = 200, ε = 0.5: a standard deviation in the thousands), the
// file never gets 0 rows: an estimate below its standard deviation is
// raised to it and flagged. P[estimate ≥ its sd] is about 16% here, so at
// least half of 300 runs are floored except with negligible probability.
func TestMWEMRowsFloor(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b"}, []int{3, 4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	hist := []Cell{{0, 4}, {5, 6}}
	cfg := Config{Epsilon: 0.5, Delta: 1e-6, Sensitivity: 200, Workers: 1}
	src := dp.NewSource()
	floored := 0
	const R = 300
	for range R {
		res, err := Run(context.Background(), src, u, []Family{Marginal([]int{0, 1})}, hist, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows <= 0 {
			t.Fatalf("Rows = %d: a release must not come out empty", res.Rows)
		}
		if res.RowsFloored {
			floored++
		}
	}
	if floored < R/2 {
		t.Errorf("%d of %d runs floored, want most", floored, R)
	}
	// Without the floor, most runs clamp to 0 rows and none is flagged.
	cfg.NoRowsFloor = true
	zero := 0
	for range R {
		res, err := Run(context.Background(), src, u, []Family{Marginal([]int{0, 1})}, hist, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.RowsFloored {
			t.Fatal("RowsFloored with NoRowsFloor")
		}
		if res.Rows == 0 {
			zero++
		}
	}
	if zero < R/4 {
		t.Errorf("%d of %d runs without the floor wrote 0 rows, want many (the estimate is below 0 half the time)", zero, R)
	}
}

// TestMWEMNoiseScaleRoundsUp: every noise scale of mwem satisfies its
// privacy inequality exactly, not only in float64: σ²·2·ρ_meas ≥ Δ̃² for
// the rounds and σ₀²·2·ρ₀ ≥ Δ̃²·d for the initial marginals (Gaussian),
// b·ε_meas ≥ Δ̃ and b₀·ε₀ ≥ Δ̃·d (Laplace), over random budgets and
// sensitivities. The plain quotients (Δ̃/√(2ρ)) it replaced fail it
// (seen failing).
func TestMWEMNoiseScaleRoundsUp(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b", "c"}, []int{2, 3, 5}, 0)
	if err != nil {
		t.Fatal(err)
	}
	exact := func(x float64) *big.Float { return new(big.Float).SetPrec(600).SetFloat64(x) }
	mul := func(xs ...float64) *big.Float {
		p := exact(1)
		for _, x := range xs {
			p.Mul(p, exact(x))
		}
		return p
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		noise := NoiseGaussian
		if i%2 == 1 {
			noise = NoiseLaplace
		}
		cfg := Config{Epsilon: 0.05 + 5*rng.Float64(), Delta: 1e-6, Sensitivity: 1 + 1000*rng.Float64(), Noise: noise}
		m, err := newMWEM(dp.NewSource(), u, []Family{Marginal([]int{0, 1})}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		d := float64(len(u.sizes))
		sens := m.sensN
		for _, c := range []float64{m.unit, m.roundsBudget, m.unit * (0.5 + rng.Float64())} {
			s, meas := m.noiseScale(c), (1-m.selFrac)*c
			if m.gauss {
				if mul(s, s, 2, meas).Cmp(mul(sens, sens)) < 0 {
					t.Fatalf("%+v: σ = %v at ρ_meas = %v: σ²·2ρ < Δ̃²", cfg, s, meas)
				}
			} else if mul(s, meas).Cmp(exact(sens)) < 0 {
				t.Fatalf("%+v: b = %v at ε_meas = %v: b·ε < Δ̃", cfg, s, meas)
			}
		}
		s0 := m.initScale()
		if m.gauss {
			if mul(s0, s0, 2, m.initCost).Cmp(mul(sens, sens, d)) < 0 {
				t.Fatalf("%+v: σ₀ = %v at ρ₀ = %v: σ₀²·2ρ₀ < Δ̃²·d", cfg, s0, m.initCost)
			}
		} else if mul(s0, m.initCost).Cmp(mul(sens, d)) < 0 {
			t.Fatalf("%+v: b₀ = %v at ε₀ = %v: b₀·ε₀ < Δ̃·d", cfg, s0, m.initCost)
		}
	}
}
