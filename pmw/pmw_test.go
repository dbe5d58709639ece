package pmw

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"gonum.org/v1/gonum/stat/distuv"
)

// constSource is a deterministic fake: every word is 2⁶³, so dp.Uniform is
// 1/2 (to 2⁻⁵³), Laplace noise is ~1e-16·scale, and every Gumbel variate of
// the exponential mechanism is the same constant, which turns selection
// into argmax (first on ties).
type constSource struct{}

func (constSource) Uint64() uint64 { return 1 << 63 }
func (constSource) Seeded() bool   { return true }

// testUniverse is 3 columns (4 × 5 × 3 = 60 cells) with a correlated,
// skewed histogram of 2000 tuples.
func testUniverse(t *testing.T) (*Universe, []Cell) {
	t.Helper()
	u, err := NewUniverse([]string{"a", "b", "c"}, []int{4, 5, 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	counts := map[int64]int64{}
	for range 2000 {
		a := rng.IntN(4)
		b := (a + rng.IntN(2)) % 5
		c := 0
		if rng.Float64() < 0.3 {
			c = 1 + rng.IntN(2)
		}
		x, _ := u.Index([]int{a, b, c})
		counts[x]++
	}
	var hist []Cell
	for x, n := range counts {
		hist = append(hist, Cell{Index: x, Count: n})
	}
	return u, hist
}

func testFamilies() []Family {
	return []Family{Marginal([]int{0, 1}), Marginal([]int{1, 2}), Marginal([]int{0, 2}), Range(1, []int{2})}
}

// TestNoiselessErrorFalls runs PMW with noise switched off (argmax
// selection, exact measurements and n̂ = |J|) and checks, on the TRUE
// data, that every round strictly lowers the relative entropy KL(J‖A_t) (the potential of the PMW analysis: with an
// exact measurement it drops by at least η² > 0), that the max workload
// error falls round after round over the default T rounds and ends below a
// quarter of where it started, and that the averaged output beats the
// uniform start.
func TestNoiselessErrorFalls(t *testing.T) {
	u, hist := testUniverse(t)
	fams := testFamilies()
	cfg := Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Rounds: 30, testExactN: true, testNoiseless: true}
	e, err := newEngine(constSource{}, u, fams, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.init(hist); err != nil {
		t.Fatal(err)
	}
	if e.nhat != 2000 {
		t.Fatalf("n̂ = %v, want |J| = 2000 exactly", e.nhat)
	}
	j := make([]float64, u.Len())
	for _, h := range hist {
		j[h.Index] += float64(h.Count)
	}
	kl := func() float64 {
		var s float64
		for x, v := range j {
			if v > 0 {
				s += v / e.nhat * math.Log(v/(e.nhat*e.w[x]/e.z))
			}
		}
		return s
	}
	prev := kl()
	for round := 1; round <= cfg.Rounds; round++ {
		e.round()
		k := kl()
		if !(k < prev) {
			t.Fatalf("round %d: KL(J‖A) = %v, not below %v", round, k, prev)
		}
		prev = k
	}
	res := e.result()
	errs := res.roundErr
	t.Logf("max error per round: %.1f", errs)
	// The max error is not a potential (fixing one query may perturb
	// others a little once the big errors are gone), but in the first T =
	// DefaultRounds rounds it must fall every round.
	for r := 1; r < DefaultRounds; r++ {
		if !(errs[r] < errs[r-1]) {
			t.Errorf("max error did not fall in round %d: %v then %v", r+1, errs[r-1], errs[r])
		}
	}
	if last := errs[len(errs)-1]; last > errs[0]/4 {
		t.Errorf("max error %v after %d rounds, want below a quarter of %v", last, cfg.Rounds, errs[0])
	}
	// The averaged output against the truth.
	var worst float64
	for _, f := range fams {
		q, _ := f.Bind(u)
		got, want := make([]float64, q.Len()), make([]float64, q.Len())
		q.Answer(res.Weights, got)
		q.Answer(j, want)
		for i := range got {
			worst = math.Max(worst, math.Abs(got[i]-want[i]))
		}
	}
	if worst > errs[0]/2 {
		t.Errorf("averaged output max error %v, want below half the initial %v", worst, errs[0])
	}
}

// naivePMW is the dense textbook PMW (DESIGN.md §4) with the same draws in
// the same order as Run: A normalised to n̂ after every update, the
// average accumulated explicitly. It is the reference for the engine's
// unnormalised weights, lazy average, table patching and re-application.
func naivePMW(t *testing.T, src dp.Source, u *Universe, fams []Family, hist []Cell, cfg Config) (float64, []float64, []Measurement) {
	t.Helper()
	var qs [][]float64
	var famOf, idxOf []int
	for fi, f := range fams {
		for i, q := range naiveQueries(t, u, f) {
			qs = append(qs, q)
			famOf, idxOf = append(famOf, fi), append(idxOf, i)
		}
	}
	j := make([]float64, u.Len())
	var n float64
	for _, h := range hist {
		j[h.Index] += float64(h.Count)
		n += float64(h.Count)
	}
	truth := make([]float64, len(qs))
	for i, q := range qs {
		truth[i] = dot(q, j)
	}
	T := cfg.rounds()
	pad, err := dp.NewTruncatedDiscreteLaplace(cfg.Epsilon/2, cfg.Delta/2, int64(math.Ceil(cfg.Sensitivity)))
	if err != nil {
		t.Fatal(err)
	}
	eps0, _ := dp.PerStepEpsilon(cfg.Epsilon/2, cfg.Delta/2, 2*T)
	nhat := n + float64(pad.Sample(src))
	a := make([]float64, u.Len())
	for x := range a {
		a[x] = nhat / float64(u.Len())
	}
	avg := make([]float64, u.Len())
	var meas []Measurement
	scores := make([]float64, len(qs))
	for range T {
		for i, q := range qs {
			scores[i] = math.Abs(dot(q, a) - truth[i])
		}
		// The exact mechanisms of a round (engine.round): selection by
		// dp.ExponentialGrid and the measurement on the grid γ with
		// discrete Laplace noise of K = ⌈Δ̃/γ⌉ + 1 steps over ε₀. On these
		// small instances the float error bounds are far below Δ̃/8192, so
		// the grids are those of the sensitivity alone (errBound 0 gives
		// the same grids).
		i := dp.ExponentialGrid(src, scores, eps0, cfg.Sensitivity, 0)
		g := dp.ExpGrid(cfg.Sensitivity, 0)
		lap, err := dp.NewDiscreteLaplace(dp.NoiseScale(float64(dp.ExpGridSensitivity(cfg.Sensitivity, g)), eps0)) // K/ε₀ rounded up, as initNoise does
		if err != nil {
			t.Fatal(err)
		}
		m := g * float64(int64(math.Round(truth[i]/g))+lap.Sample(src))
		meas = append(meas, Measurement{Round: len(meas) + 1, Family: famOf[i], Query: idxOf[i], Value: m})
		list := meas[len(meas)-1:]
		if cfg.Reapply {
			list = meas
		}
		for _, mt := range list {
			var q []float64
			for k := range qs {
				if famOf[k] == mt.Family && idxOf[k] == mt.Query {
					q = qs[k]
				}
			}
			eta := (math.Max(-nhat, math.Min(nhat, mt.Value)) - dot(q, a)) / (2 * nhat)
			var z float64
			for x := range a {
				a[x] *= math.Exp(q[x] * eta)
				z += a[x]
			}
			for x := range a {
				a[x] *= nhat / z
			}
		}
		for x := range a {
			avg[x] += a[x] / float64(T)
		}
	}
	return nhat, avg, meas
}

// TestRunMatchesNaive compares Run with real (seeded) noise against the
// dense reference, with and without re-application, on a universe small
// enough for one worker and one large enough for two.
func TestRunMatchesNaive(t *testing.T) {
	u, hist := testUniverse(t)
	big, err := NewUniverse([]string{"a", "b", "c", "d"}, []int{20, 10, 19, 18}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var bigHist []Cell
	for range 300 {
		bigHist = append(bigHist, Cell{Index: rng.Int64N(big.Len() / 7), Count: 1 + rng.Int64N(20)})
	}
	for _, tc := range []struct {
		name string
		u    *Universe
		hist []Cell
		fams []Family
		cfg  Config
	}{
		{"small", u, hist, testFamilies(), Config{Variant: VariantPaper, Epsilon: 2, Delta: 1e-6, Sensitivity: 2, Rounds: 12}},
		{"small reapply", u, hist, testFamilies(), Config{Variant: VariantPaper, Epsilon: 2, Delta: 1e-6, Sensitivity: 2, Rounds: 12, Reapply: true}},
		{"small all families", u, hist, append(testFamilies(),
			Weighted([]int{0}, []int{2}, []float64{0.1, -0.5, 1}),
			Linear([]LinearQuery{{Terms: []Term{{Cell: 3, Value: 1}, {Cell: 17, Value: -0.5}}}})),
			Config{Variant: VariantPaper, Epsilon: 5, Delta: 1e-6, Sensitivity: 1, Rounds: 15, Reapply: true}},
		{"two workers", big, bigHist, []Family{Marginal([]int{0, 1}), Marginal([]int{2, 3}), Marginal([]int{3})},
			Config{Variant: VariantPaper, Epsilon: 3, Delta: 1e-6, Sensitivity: 1, Rounds: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(context.Background(), dp.NewSeededSource(42), tc.u, tc.fams, tc.hist, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			nhat, avg, meas := naivePMW(t, dp.NewSeededSource(42), tc.u, tc.fams, tc.hist, tc.cfg)
			if res.NHat != nhat {
				t.Fatalf("n̂ = %v, reference %v", res.NHat, nhat)
			}
			if len(res.Measurements) != len(meas) {
				t.Fatalf("%d measurements, reference %d", len(res.Measurements), len(meas))
			}
			for i, m := range meas {
				g := res.Measurements[i]
				if g.Family != m.Family || g.Query != m.Query || math.Abs(g.Value-m.Value) > 1e-9*nhat {
					t.Fatalf("round %d: selected %d/%d m=%v, reference %d/%d m=%v", i+1, g.Family, g.Query, g.Value, m.Family, m.Query, m.Value)
				}
			}
			var sum float64
			for x, v := range res.Weights {
				sum += v
				if math.Abs(v-avg[x]) > 1e-9*nhat {
					t.Fatalf("average at cell %d = %v, reference %v", x, v, avg[x])
				}
			}
			if math.Abs(sum-nhat) > 1e-9*nhat {
				t.Fatalf("average sums to %v, want n̂ = %v", sum, nhat)
			}
			if !res.Seeded {
				t.Error("seeded source not reported")
			}
		})
	}
}

// TestSelectionFollowsExponentialMechanism runs one round many times from
// the same A_0 (n̂ = |J| so the scores are fixed) and compares the selected
// queries with the exponential mechanism's proportions exp(ε₀·s/(2Δ̃)) by a
// chi-square test at false-failure rate 1e-6. It also checks the
// measurement noise scale: mean |m − q(J)| = Δ̃/ε₀ within 5.5 standard
// errors (false failure < 1e-7 by the CLT).
func TestSelectionFollowsExponentialMechanism(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	u, err := NewUniverse([]string{"a"}, []int{4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	hist := []Cell{{1, 3}, {2, 10}, {3, 1}} // n = 14, A_0 = 3.5 per cell
	truth := []float64{0, 3, 10, 1}
	cfg := Config{Variant: VariantPaper, Epsilon: 1, Delta: 1e-6, Sensitivity: 2, Rounds: 1, testExactN: true}
	eps0, _ := dp.PerStepEpsilon(0.5, 5e-7, 2)
	w := make([]float64, 4)
	var wsum float64
	for i, q := range truth {
		w[i] = math.Exp(eps0 * math.Abs(3.5-q) / (2 * cfg.Sensitivity))
		wsum += w[i]
	}
	const N = 20000
	counts := make([]float64, 4)
	var absNoise float64
	src := dp.NewSeededSource(99)
	for range N {
		res, err := Run(context.Background(), src, u, []Family{Marginal([]int{0})}, hist, cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := res.Measurements[0]
		counts[m.Query]++
		absNoise += math.Abs(m.Value - truth[m.Query])
	}
	var chi2 float64
	for i, c := range counts {
		exp := N * w[i] / wsum
		chi2 += (c - exp) * (c - exp) / exp
	}
	crit := distuv.ChiSquared{K: 3}.Quantile(1 - 1e-6)
	t.Logf("counts %v, expected %v, chi2 = %.2f (critical %.2f)", counts, w, chi2, crit)
	if chi2 > crit {
		t.Errorf("chi-square %.2f above %.2f: selection does not follow exp(ε₀·score/(2Δ̃))", chi2, crit)
	}
	b := cfg.Sensitivity / eps0
	mean := absNoise / N
	if se := b / math.Sqrt(N); math.Abs(mean-b) > 5.5*se {
		t.Errorf("mean |noise| = %v, want Δ̃/ε₀ = %v ± %v", mean, b, 5.5*se)
	}
}

func TestConfigValidation(t *testing.T) {
	u, hist := testUniverse(t)
	ok := Config{Variant: VariantPaper, Epsilon: 1, Delta: 1e-6, Sensitivity: 1}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"epsilon zero", func(c *Config) { c.Epsilon = 0 }},
		{"epsilon negative", func(c *Config) { c.Epsilon = -1 }},
		{"epsilon NaN", func(c *Config) { c.Epsilon = math.NaN() }},
		{"epsilon Inf", func(c *Config) { c.Epsilon = math.Inf(1) }},
		{"delta zero", func(c *Config) { c.Delta = 0 }},
		{"delta one", func(c *Config) { c.Delta = 1 }},
		{"delta negative", func(c *Config) { c.Delta = -1e-6 }},
		{"delta NaN", func(c *Config) { c.Delta = math.NaN() }},
		{"sensitivity below 1", func(c *Config) { c.Sensitivity = 0.5 }},
		{"sensitivity zero", func(c *Config) { c.Sensitivity = 0 }},
		{"sensitivity NaN", func(c *Config) { c.Sensitivity = math.NaN() }},
		{"sensitivity Inf", func(c *Config) { c.Sensitivity = math.Inf(1) }},
		{"rounds negative", func(c *Config) { c.Rounds = -1 }},
		{"workers negative", func(c *Config) { c.Workers = -2 }},
		{"unknown variant", func(c *Config) { c.Variant = "aim" }},
		{"unknown noise", func(c *Config) { c.Noise = "cauchy" }},
		{"share negative", func(c *Config) { c.NHatShare = -0.1 }},
		{"share one", func(c *Config) { c.NHatShare = 1 }},
		{"share NaN", func(c *Config) { c.NHatShare = math.NaN() }},
		{"max rounds negative", func(c *Config) { c.MaxRounds = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "pmw: ") {
				t.Fatalf("Validate = %v, want a pmw: error wrapping ErrInvalidConfig", err)
			}
			if _, err := Run(context.Background(), dp.NewSeededSource(1), u, testFamilies(), hist, c); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Run = %v, want ErrInvalidConfig", err)
			}
		})
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	res, err := Run(context.Background(), dp.NewSeededSource(1), u, testFamilies(), hist, ok)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rounds != DefaultRounds {
		t.Fatalf("Rounds = %d, want the default %d", res.Rounds, DefaultRounds)
	}
}

func TestRunInputErrors(t *testing.T) {
	for _, v := range []Variant{VariantPaper, VariantMWEM} {
		t.Run(string(v), func(t *testing.T) { testRunInputErrors(t, v) })
	}
}

func testRunInputErrors(t *testing.T, v Variant) {
	u, hist := testUniverse(t)
	cfg := Config{Variant: v, Epsilon: 1, Delta: 1e-6, Sensitivity: 1}
	other, _ := NewUniverse([]string{"z"}, []int{2}, 0)
	src := dp.NewSeededSource(1)
	for _, tc := range []struct {
		name string
		run  func() error
		want error
	}{
		{"cell out of range", func() error {
			_, err := Run(context.Background(), src, u, testFamilies(), []Cell{{Index: 60, Count: 1}}, cfg)
			return err
		}, ErrInvalidInput},
		{"negative count", func() error {
			_, err := Run(context.Background(), src, u, testFamilies(), []Cell{{Index: 1, Count: -1}}, cfg)
			return err
		}, ErrInvalidInput},
		{"family over other columns", func() error {
			_, err := Run(context.Background(), src, other, testFamilies(), nil, cfg)
			return err
		}, ErrInvalidInput},
		{"no families", func() error {
			_, err := Run(context.Background(), src, u, nil, hist, cfg)
			return err
		}, ErrInvalidInput},
		{"nil source", func() error {
			_, err := Run(context.Background(), nil, u, testFamilies(), hist, cfg)
			return err
		}, ErrInvalidInput},
		{"tables above the cap", func() error {
			small, err := NewUniverse([]string{"a", "b"}, []int{300, 300}, 16*90000+1000)
			if err != nil {
				return err
			}
			_, err = Run(context.Background(), src, small, []Family{Marginal([]int{0, 1})}, nil, cfg)
			return err
		}, ErrTooLarge},
		{"cancelled", func() error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := Run(ctx, src, u, testFamilies(), hist, cfg)
			return err
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestLedger checks the budget split: two charges of (ε/2, δ/2) with the
// rule text and details {T, eps0}, n̂ published, and a refusal that
// charges nothing when the budget does not remain.
func TestLedger(t *testing.T) {
	u, hist := testUniverse(t)
	l, err := dp.NewLedger(dp.Budget{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Variant: VariantPaper, Epsilon: 1, Delta: 1e-6, Sensitivity: 3, Rounds: 7, Ledger: l}
	res, err := Run(context.Background(), dp.NewSeededSource(5), u, testFamilies(), hist, cfg)
	if err != nil {
		t.Fatal(err)
	}
	spends := l.Spends()
	if len(spends) != 2 {
		t.Fatalf("%d spends, want 2", len(spends))
	}
	eps0, _ := dp.PerStepEpsilon(0.5, 5e-7, 14)
	for _, s := range spends {
		if s.Epsilon != 0.5 || s.Delta != 5e-7 {
			t.Errorf("%s charged (%v, %v), want (0.5, 5e-7)", s.Mechanism, s.Epsilon, s.Delta)
		}
		if s.Rule == "" || s.Details["T"] != 7 || s.Details["eps0"] != eps0 {
			t.Errorf("%s: rule %q details %v, want T = 7 and eps0 = %v", s.Mechanism, s.Rule, s.Details, eps0)
		}
	}
	if res.Eps0 != eps0 {
		t.Errorf("Eps0 = %v, want %v", res.Eps0, eps0)
	}
	outs := l.Outputs()
	if len(outs) != 1 || outs[0].Value != res.NHat {
		t.Errorf("published %v, want n̂ = %v only", outs, res.NHat)
	}
	if res.NHat < 2000 {
		t.Errorf("n̂ = %v below |J| = 2000: TLap must never lower it", res.NHat)
	}
	if res.NHat != math.Trunc(res.NHat) {
		t.Errorf("n̂ = %v is not an integer: a float from a continuous sampler must not be published", res.NHat)
	}
	// Nothing remains: the next run must be refused before any charge.
	assertRefusedRun(t, l, 2, u, hist, cfg)
}

// assertRefusedRun checks that a run with cfg (whose ledger l holds
// spends entries and no budget left) is refused with ErrBudgetExceeded
// before it charges anything.
func assertRefusedRun(t *testing.T, l *dp.Ledger, spends int, u *Universe, hist []Cell, cfg Config) {
	t.Helper()
	if _, err := Run(context.Background(), dp.NewSeededSource(5), u, testFamilies(), hist, cfg); !errors.Is(err, dp.ErrBudgetExceeded) {
		t.Fatalf("second run: %v, want ErrBudgetExceeded", err)
	}
	if len(l.Spends()) != spends {
		t.Fatal("refused run charged the ledger")
	}
}

// TestAutoRounds checks App. A's rule: T grows linearly with n̂ and ε,
// shrinks with Δ̃, and is clamped to [DefaultRounds, max].
func TestAutoRounds(t *testing.T) {
	for _, tc := range []struct {
		name       string
		nhat, sens float64
		max, want  int
	}{
		{"tiny join", 100, 1, 1000, DefaultRounds},
		{"heavy sensitivity", 1e5, 1e4, 1000, DefaultRounds},
		{"clamped", 1e7, 1, 500, 500},
		{"max below default", 1e7, 1, 3, DefaultRounds},
		{"negative n̂", -5, 1, 1000, DefaultRounds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AutoRounds(tc.nhat, 0.5, 5e-7, tc.sens, 1000, 50, tc.max); got != tc.want {
				t.Fatalf("AutoRounds = %d, want %d", got, tc.want)
			}
		})
	}
	// In range: the formula itself, rounded up.
	want := int(math.Ceil(2e4 * 0.5 * math.Sqrt(math.Log(1000)) / (2 * math.Log(50) * math.Sqrt(math.Log(1/5e-7)))))
	if got := AutoRounds(2e4, 0.5, 5e-7, 2, 1000, 50, 10_000); got != want || got <= DefaultRounds {
		t.Fatalf("AutoRounds = %d, want %d (> %d)", got, want, DefaultRounds)
	}
}

// TestRunAutoRounds: with MaxRounds set, Run picks T from the DP n̂,
// publishes it, and the rounds still spend exactly (ε/2, δ/2).
func TestRunAutoRounds(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b"}, []int{10, 10}, 0)
	if err != nil {
		t.Fatal(err)
	}
	hist := make([]Cell, 100)
	for i := range hist {
		hist[i] = Cell{Index: int64(i), Count: int64(200 + i)}
	}
	l, _ := dp.NewLedger(dp.Budget{Epsilon: 2, Delta: 1e-6})
	res, err := Run(context.Background(), dp.NewSource(), u, []Family{Marginal([]int{0}), Marginal([]int{1})}, hist,
		Config{Variant: VariantPaper, Epsilon: 2, Delta: 1e-6, Sensitivity: 1, MaxRounds: 300, Ledger: l, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := AutoRounds(res.NHat, 1, 5e-7, 1, 100, 20, 300)
	if res.Rounds != want || want <= DefaultRounds {
		t.Fatalf("ran %d rounds, want AutoRounds = %d > %d", res.Rounds, want, DefaultRounds)
	}
	var published float64
	for _, o := range l.Outputs() {
		if o.Name == "pmw_rounds" {
			published = o.Value
		}
	}
	if published != float64(want) {
		t.Fatalf("published pmw_rounds = %v, want %d", published, want)
	}
	if rem := l.Remaining(); rem.Epsilon > 1e-9 {
		t.Fatalf("ledger left ε = %v", rem.Epsilon)
	}
	eps0, _ := dp.PerStepEpsilon(1, 5e-7, 2*want)
	if math.Abs(res.Eps0-eps0) > 1e-15 {
		t.Fatalf("ε₀ = %v, want %v for T = %d", res.Eps0, eps0, want)
	}
}

// TestRenormaliseRefreshesTables: when the unnormalised weights drift out
// of float range, renormalise rescales them; the cached marginal tables
// must not be reused at the old scale.
func TestRenormaliseRefreshesTables(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b"}, []int{4, 5}, 0)
	if err != nil {
		t.Fatal(err)
	}
	hist := []Cell{{Index: 0, Count: 30}, {Index: 7, Count: 50}, {Index: 19, Count: 20}}
	e, err := newEngine(dp.NewSource(), u, []Family{Marginal([]int{0}), Marginal([]int{1})},
		Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.init(hist); err != nil {
		t.Fatal(err)
	}
	e.round()
	e.answers() // tables fresh for the current w
	want := append([]float64(nil), e.ans...)
	for i := range want {
		want[i] *= e.nhat / e.z
	}
	// An equivalent state whose weights are tiny: w, Z, the tables all
	// scaled by 1e-120, R by 1e120.
	const c = 1e-120
	for i := range e.w {
		e.w[i] *= c
	}
	for i := range e.scratch[0] {
		e.scratch[0][i] *= c
	}
	e.z *= c
	e.r /= c
	e.renormalise()
	e.answers()
	for i := range want {
		if got := e.ans[i] * e.nhat / e.z; math.Abs(got-want[i]) > 1e-9*math.Max(1, want[i]) {
			t.Fatalf("answer %d after renormalise: %v, want %v", i, got, want[i])
		}
	}
}
