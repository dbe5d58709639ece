package numerical

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// tiny builds a random small instance: a grid of 2 columns, a signed
// measure, random points (tuples) and random box queries.
type tinyInstance struct {
	g      Grid
	m      Measure
	tuples [][2]int64 // cell, units
	qs     []Query
}

func newTiny(r *rand.Rand, lo, hi float64, nTuples, nQueries int) tinyInstance {
	g := Grid{Names: []string{"a", "b"}, Sizes: []int{1 + r.IntN(4), 1 + r.IntN(3)}}
	in := tinyInstance{g: g, m: Measure{Name: "v", Min: lo, Max: hi}}
	for range nTuples {
		c := r.Int64N(g.Cells())
		y := int64(math.Round(lo)) + r.Int64N(int64(hi-lo)+1)
		if r.IntN(3) == 0 {
			y = 0
		}
		in.tuples = append(in.tuples, [2]int64{c, y})
	}
	for range nQueries {
		w := make([][]int, len(g.Sizes))
		for d, n := range g.Sizes {
			if r.IntN(3) == 0 {
				continue // nil: every code
			}
			for code := range n {
				if r.IntN(2) == 0 {
					w[d] = append(w[d], code)
				}
			}
			if len(w[d]) == 0 {
				w[d] = []int{r.IntN(n)}
			}
		}
		in.qs = append(in.qs, Query{Where: w})
	}
	return in
}

func (in tinyInstance) points() []Point {
	var ps []Point
	for _, t := range in.tuples {
		ps = append(ps, Point{Cell: t[0], Units: t[1], Count: 1})
	}
	return ps
}

// inBox reports whether cell lies in query q's box (brute force).
func inBox(g Grid, q Query, cell int64) bool {
	codes := make([]int, len(g.Sizes))
	for d := len(g.Sizes) - 1; d >= 0; d-- {
		codes[d] = int(cell % int64(g.Sizes[d]))
		cell /= int64(g.Sizes[d])
	}
	for d, w := range q.Where {
		if w == nil {
			continue
		}
		ok := false
		for _, c := range w {
			ok = ok || c == codes[d]
		}
		if !ok {
			return false
		}
	}
	return true
}

// bruteElements lists the (cell, sign, magnitude) elements of a tuple on
// u, written independently of Universe.Elements: one element full, one
// per binary digit reduced.
func bruteElements(u *Universe, cell, y int64) [][3]int64 {
	if y == 0 {
		return nil
	}
	s := int64(0)
	if y < 0 {
		s, y = 1, -y
	}
	if !u.Reduced() {
		return [][3]int64{{cell, s, y}}
	}
	var out [][3]int64
	for i := int64(0); i < 63; i++ {
		if y&(1<<i) != 0 {
			out = append(out, [3]int64{cell, s, 1 << i})
		}
	}
	return out
}

func TestEvaluatorBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 60 {
		in := newTiny(r, -float64(r.IntN(9)), float64(1+r.IntN(20)), 1+r.IntN(30), 1+r.IntN(6))
		red := ReduceNever
		if trial%2 == 1 {
			red = ReduceAlways
		}
		u, err := NewUniverse(in.g, in.m, UniverseOptions{Reduction: red})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := newEvaluator(u, in.qs)
		if err != nil {
			t.Fatal(err)
		}
		for q := range in.qs {
			for _, s := range signs(u) {
				for _, tau := range append([]int64{0}, append(powers(u.bound[s]), u.bound[s])...) {
					ev.addItem(q, table{sign: s, kind: countKind, tau: tau})
					if tau > 0 {
						ev.addItem(q, table{sign: s, kind: linearKind, tau: tau})
					}
				}
			}
		}
		h := make([]float64, u.Size())
		for _, tp := range in.tuples {
			u.Elements(tp[0], tp[1], func(e int64) { h[e]++ })
		}
		got := make([]float64, len(ev.items))
		ev.answer(h, 1, got)
		for i, it := range ev.items {
			tb := ev.tables[it.t]
			var want float64
			for _, tp := range in.tuples {
				if !inBox(in.g, in.qs[it.q], tp[0]) {
					continue
				}
				for _, e := range bruteElements(u, tp[0], tp[1]) {
					if int(e[1]) != tb.sign {
						continue
					}
					if tb.kind == countKind {
						if e[2] > tb.tau {
							want++
						}
					} else {
						want += float64(min(e[2], tb.tau))
					}
				}
			}
			if math.Abs(got[i]-want) > 1e-6 {
				t.Fatalf("trial %d (%s) item %d table %+v: got %v, want %v", trial, u, i, tb, got[i], want)
			}
			// The support walks exactly the same elements.
			var sup float64
			ev.support(i, func(e int64, v float64) { sup += h[e] * v })
			if math.Abs(sup-want) > 1e-6 {
				t.Fatalf("trial %d item %d: support sum %v, want %v", trial, i, sup, want)
			}
		}
		ex, err := Exact(u, in.qs, in.points())
		if err != nil {
			t.Fatal(err)
		}
		for q := range in.qs {
			var want float64
			for _, tp := range in.tuples {
				if inBox(in.g, in.qs[q], tp[0]) {
					want += float64(tp[1])
				}
			}
			if ex[q] != want {
				t.Fatalf("trial %d: Exact[%d] = %v, want %v", trial, q, ex[q], want)
			}
		}
	}
}

// TestSensitivityBruteForce checks every table's per-tuple sensitivity
// against the largest contribution of any single tuple of the domain:
// never below it (privacy), and equal to it on the full universe.
func TestSensitivityBruteForce(t *testing.T) {
	for _, dom := range [][2]float64{{0, 1}, {0, 13}, {-6, 17}, {-32, 0}, {0, 64}} {
		for _, red := range []Reduction{ReduceNever, ReduceAlways} {
			u, err := NewUniverse(Grid{Sizes: []int{1}}, Measure{Min: dom[0], Max: dom[1]}, UniverseOptions{Reduction: red})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range signs(u) {
				for _, tau := range append([]int64{0}, append(powers(u.bound[s]), u.bound[s])...) {
					for _, k := range []kind{countKind, linearKind} {
						if k == linearKind && tau == 0 {
							continue
						}
						tb := table{sign: s, kind: k, tau: tau}
						var worst float64
						for y := -u.bound[1]; y <= u.bound[0]; y++ {
							var c float64
							for _, e := range bruteElements(u, 0, y) {
								if int(e[1]) == s {
									c += tb.value(e[2])
								}
							}
							worst = math.Max(worst, c)
						}
						got := u.sensitivity(tb)
						if got < worst || (red == ReduceNever && got != worst) {
							t.Errorf("dom %v %s table %+v: sensitivity %v, worst single tuple %v", dom, u, tb, got, worst)
						}
					}
				}
			}
		}
	}
}

func TestUniverse(t *testing.T) {
	g := Grid{Names: []string{"age", "edu"}, Sizes: []int{100, 16}}
	u, err := NewUniverse(g, Measure{Name: "loss", Min: 0, Max: 4396}, UniverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 1600 × 4396 × 24 bytes > 64 MiB: reduced to 1600 × 13 (the paper's 20,800).
	if !u.Reduced() || u.Size() != 20800 || u.GroupFactor() != 13 {
		t.Fatalf("adult loss universe: %s, want reduced 20800 elements, group factor 13", u)
	}
	u, err = NewUniverse(g, Measure{Name: "loss", Min: 0, Max: 4396}, UniverseOptions{MemoryCap: 1 << 30})
	if err != nil || u.Reduced() || u.Size() != 1600*4396 || u.GroupFactor() != 1 {
		t.Fatalf("with a 1 GiB cap: %v, %v; want the full universe", u, err)
	}
	// MaxFullElements reduces a full universe that fits the memory but not
	// the time budget; one element fewer than it keeps the full one.
	for _, c := range []struct {
		max     int64
		reduced bool
	}{{1600*4396 - 1, true}, {1600 * 4396, false}, {0, false}} {
		u, err = NewUniverse(g, Measure{Min: 0, Max: 4396}, UniverseOptions{MemoryCap: 1 << 30, MaxFullElements: c.max})
		if err != nil || u.Reduced() != c.reduced {
			t.Errorf("MaxFullElements %d: %v, %v; want reduced %v", c.max, u, err, c.reduced)
		}
	}
	if _, err := NewUniverse(g, Measure{Min: 0, Max: 4396}, UniverseOptions{Reduction: ReduceNever}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("full universe above the cap: err = %v, want ErrTooLarge", err)
	}
	// Bank: signed, [−2¹³, 2¹⁷]: 14 + 18 values.
	u, err = NewUniverse(Grid{Sizes: []int{100, 2, 2}}, Measure{Min: -8192, Max: 131072}, UniverseOptions{})
	if err != nil || !u.Reduced() || u.Size() != 400*(14+18) || u.GroupFactor() != 18 || !u.Signed() {
		t.Fatalf("bank universe: %v, %v", u, err)
	}
	// Fractional: resolution 0.25 on [0, 3] is 12 units.
	u, err = NewUniverse(Grid{Sizes: []int{2}}, Measure{Min: 0, Max: 3, Resolution: 0.25}, UniverseOptions{})
	if err != nil || u.Bound(false) != 12 || u.Units(1.13) != 5 || u.Units(99) != 12 {
		t.Fatalf("fractional universe: %v, %v, bound %d, units(1.13) = %d", u, err, u.Bound(false), u.Units(1.13))
	}
	for _, bad := range []Measure{{Min: 1, Max: 1}, {Min: math.NaN(), Max: 1}, {Min: 0, Max: 1, Resolution: -1}, {Min: 0, Max: 0.5}} {
		if _, err := NewUniverse(Grid{Sizes: []int{2}}, bad, UniverseOptions{}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("measure %+v: err = %v, want ErrInvalidInput", bad, err)
		}
	}
	if _, err := NewUniverse(Grid{Sizes: []int{0}}, Measure{Max: 1}, UniverseOptions{}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("empty grid column: err = %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"zero eps", Config{}},
		{"nan eps", Config{Epsilon: math.NaN()}},
		{"inf eps", Config{Epsilon: math.Inf(1)}},
		{"delta 1", Config{Epsilon: 1, Delta: 1}},
		{"sens 0.5", Config{Epsilon: 1, Sensitivity: 0.5}},
		{"shares", Config{Epsilon: 1, InitShare: 0.6, AlphaShare: 0.5}},
		{"rounds", Config{Epsilon: 1, Rounds: -1}},
	} {
		if err := c.cfg.validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", c.name, err)
		}
	}
	if err := (Config{Epsilon: 1}).validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// TestRunExactLens feeds Alg. 2 the true histogram as D̃ with α = 0 (fake
// noise): the search must then stop at the smallest power of two at or
// above the largest value (digit, reduced) of each query, and answer
// exactly.
func TestRunExactLens(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 40 {
		in := newTiny(r, -float64(r.IntN(9)), float64(1+r.IntN(40)), 1+r.IntN(25), 1+r.IntN(5))
		red := []Reduction{ReduceNever, ReduceAlways}[trial%2]
		u, err := NewUniverse(in.g, in.m, UniverseOptions{Reduction: red})
		if err != nil {
			t.Fatal(err)
		}
		h := make([]float64, u.Size())
		for _, tp := range in.tuples {
			u.Elements(tp[0], tp[1], func(e int64) { h[e]++ })
		}
		cfg := Config{Epsilon: 1, testSynthetic: h, testAlphaNoNoise: true}
		res, err := Run(context.Background(), dp.NewSeededSource(uint64(trial)), u, in.qs, in.points(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ex, _ := Exact(u, in.qs, in.points())
		for q := range in.qs {
			if math.Abs(res.Answers[q]-ex[q]) > 1e-6 {
				t.Fatalf("trial %d (%s) query %d: answer %v, want %v", trial, u, q, res.Answers[q], ex[q])
			}
			for _, s := range signs(u) {
				var top int64 // largest element magnitude of sign s in the box
				for _, tp := range in.tuples {
					if inBox(in.g, in.qs[q], tp[0]) {
						for _, e := range bruteElements(u, tp[0], tp[1]) {
							if int(e[1]) == s {
								top = max(top, e[2])
							}
						}
					}
				}
				want := int64(0)
				if top > 0 {
					want = 1
					for want < top && want < u.bound[s] {
						want *= 2
					}
					want = min(want, u.bound[s])
				}
				if res.Thresholds[q][s] != float64(want) {
					t.Fatalf("trial %d (%s) query %d sign %d: threshold %v, want %d (top %d)", trial, u, q, s, res.Thresholds[q][s], want, top)
				}
			}
		}
	}
}

// TestRunLargeAlpha: with α̃ above every count (a tiny ε_α makes the
// noise irrelevant here only through the lens), every answer is 0.
func TestRunAlphaAboveAll(t *testing.T) {
	u, err := NewUniverse(Grid{Sizes: []int{3}}, Measure{Min: 0, Max: 8}, UniverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := []Point{{Cell: 0, Units: 8, Count: 5}, {Cell: 1, Units: 3, Count: 2}}
	h := make([]float64, u.Size()) // D̃ = 0 everywhere: α = the largest true count, 7
	cfg := Config{Epsilon: 1, testSynthetic: h, testAlphaNoNoise: true}
	res, err := Run(context.Background(), dp.NewSeededSource(1), u, []Query{{}, {Where: [][]int{{0}}}}, data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Alpha != 7 || res.Answers[0] != 0 || res.Answers[1] != 0 {
		t.Fatalf("α = %d, answers %v; want α = 7 and all 0", res.Alpha, res.Answers)
	}
}

func TestLedgerCharges(t *testing.T) {
	u, _ := NewUniverse(Grid{Sizes: []int{4}}, Measure{Min: -3, Max: 20}, UniverseOptions{})
	data := []Point{{Cell: 0, Units: 8, Count: 5}, {Cell: 1, Units: -3, Count: 2}}
	qs := []Query{{}, {Where: [][]int{{1, 2}}}}
	for name, run := range map[string]func(context.Context, dp.Source, *Universe, []Query, []Point, Config) (*Result, error){
		"ours": Run, "normalization": Normalization, "global": GlobalTruncation, "composition": Composition,
	} {
		l, _ := dp.NewLedger(dp.Budget{Epsilon: 1, Delta: 1e-6})
		if _, err := run(context.Background(), dp.NewSeededSource(7), u, qs, data, Config{Epsilon: 1, Delta: 1e-6, Ledger: l}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rem := l.Remaining(); rem.Epsilon > 1e-9 {
			t.Errorf("%s: ε %v left, want all of it charged", name, rem.Epsilon)
		}
		// A second run must be refused before reading data.
		if _, err := run(context.Background(), dp.NewSeededSource(7), u, qs, data, Config{Epsilon: 1, Delta: 1e-6, Ledger: l}); !errors.Is(err, dp.ErrBudgetExceeded) {
			t.Errorf("%s: second run: err = %v, want ErrBudgetExceeded", name, err)
		}
	}
}

func TestDefaultResolution(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		integer  bool
		want     float64
	}{
		{0, 4396, true, 1},
		{-8192, 131072, true, 1},
		{0, 1 << 32, true, 10000},
		{0, 0.1, false, 1e-7},
		{0, 105000, false, 1}, // 1,050,000 units at 0.1 would exceed 2²⁰
		{-1, 1, false, 1e-6},
	} {
		got := DefaultResolution(c.min, c.max, c.integer)
		if math.Abs(got-c.want) > c.want*1e-9 {
			t.Errorf("DefaultResolution(%v, %v, %v) = %v, want %v", c.min, c.max, c.integer, got, c.want)
		}
		if bound := math.Max(math.Abs(c.min), math.Abs(c.max)); bound/got > 1<<20 {
			t.Errorf("DefaultResolution(%v, %v): %v units, above 2²⁰", c.min, c.max, bound/got)
		}
	}
}

// TestAlphaNoiseCalibration: under the lens (D̃ fixed), α̃ − ⌈α⌉ must be
// the discrete Laplace of scale s_α/ε_α = 1/0.5 = 2 (full universe, one
// table). Mean and variance are checked at 5 standard errors (false
// failure about 6·10⁻⁷ each, by the normal approximation over 20,000 runs;
// the variance's standard error uses the discrete Laplace's kurtosis,
// below 6).
func TestAlphaNoiseCalibration(t *testing.T) {
	u := auditUniverse(t)
	syn := make([]float64, u.Size())
	syn[0] = 4.5
	cfg := Config{Epsilon: 1, AlphaShare: 0.5, InitShare: 0.1, testSynthetic: syn}
	data := []Point{{Cell: 0, Units: 1, Count: 1}} // α = |1 − 4.5| → ⌈α⌉ = 4
	const n = 20000
	src := dp.NewSeededSource(42)
	var sum, sum2 float64
	for range n {
		res, err := Run(context.Background(), src, u, []Query{{}}, data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		x := float64(res.Alpha - 4)
		sum += x
		sum2 += x * x
	}
	mean := sum / n
	variance := sum2/n - mean*mean
	p := math.Exp(-1 / 2.0)
	want := 2 * p / ((1 - p) * (1 - p)) // variance of Lap_ℤ(2)
	if se := math.Sqrt(want / n); math.Abs(mean) > 5*se {
		t.Errorf("mean of α̃ − ⌈α⌉ = %.4f, want 0 ± %.4f", mean, 5*se)
	}
	if se := want * math.Sqrt(5.0/n); math.Abs(variance-want) > 5*se {
		t.Errorf("variance of α̃ − ⌈α⌉ = %.3f, want %.3f ± %.3f", variance, want, 5*se)
	}
}

// TestCompositionNearExact: at ε = 10⁴ the R2T shift (< 1 unit) and noise
// (scale ≤ 0.22 units) nearly vanish and the largest threshold wins, so
// Composition returns the exact sums to within 2 units per query (a
// noise of 2 has probability about 10⁻⁴ per threshold; the seed is fixed).
func TestCompositionNearExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	in := newTiny(r, -7, 30, 40, 6)
	u, err := NewUniverse(in.g, in.m, UniverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Composition(context.Background(), dp.NewSeededSource(1), u, in.qs, in.points(), Config{Epsilon: 1e4})
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := Exact(u, in.qs, in.points())
	for q := range in.qs {
		if math.Abs(res.Answers[q]-ex[q]) > 2 {
			t.Errorf("query %d: %v, want %v", q, res.Answers[q], ex[q])
		}
	}
}

func TestInvalidInputs(t *testing.T) {
	u, err := NewUniverse(Grid{Sizes: []int{3, 2}}, Measure{Min: -2, Max: 5}, UniverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	good := []Point{{Cell: 1, Units: 3, Count: 2}}
	for name, c := range map[string]struct {
		qs   []Query
		data []Point
	}{
		"code out of range":  {[]Query{{Where: [][]int{{3}, nil}}}, good},
		"empty condition":    {[]Query{{Where: [][]int{{}, nil}}}, good},
		"wrong column count": {[]Query{{Where: [][]int{{0}}}}, good},
		"cell out of range":  {[]Query{{}}, []Point{{Cell: 6, Units: 1, Count: 1}}},
		"value above bound":  {[]Query{{}}, []Point{{Cell: 0, Units: 6, Count: 1}}},
		"value below bound":  {[]Query{{}}, []Point{{Cell: 0, Units: -3, Count: 1}}},
		"negative count":     {[]Query{{}}, []Point{{Cell: 0, Units: 1, Count: -1}}},
	} {
		for _, m := range mechanisms {
			if _, err := m.run(ctx, dp.NewSeededSource(1), u, c.qs, c.data, Config{Epsilon: 1}); !errors.Is(err, ErrInvalidInput) {
				t.Errorf("%s, %s: err = %v, want ErrInvalidInput", name, m.name, err)
			}
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Run(cancelled, dp.NewSeededSource(1), u, []Query{{}}, good, Config{Epsilon: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v, want context.Canceled", err)
	}
}
