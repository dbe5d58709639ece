package joinasone

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
)

// fig1 builds the two-table instance of Ghazi et al. Figure 1: R1 holds n
// tuples (a_i, b1) and R2 the single tuple (b1, c0) — or nothing, for the
// neighbour I′. Released columns: A (nA values, from R1) and C (nC values,
// from R2).
func fig1(n, nA int, withR2 bool) (*hypergraph.Hypergraph, *fakeStats) {
	h, err := hypergraph.New([]hypergraph.Relation{
		{Name: "r1", Attrs: map[string]string{"B": "b"}},
		{Name: "r2", Attrs: map[string]string{"B": "b"}},
	})
	if err != nil {
		panic(err)
	}
	f := &fakeStats{rels: map[string][]tuple{}}
	for i := 0; i < n; i++ {
		f.rels["r1"] = append(f.rels["r1"], tuple{"a": i % nA, "b": 1})
	}
	if withR2 {
		f.rels["r2"] = []tuple{{"b": 1, "c": 0}}
	}
	return h, f
}

var fig1Cols = []spec.ColumnRef{{Table: "r1", Column: "a"}, {Table: "r2", Column: "c"}}

func fig1Config(t testing.TB, eps, delta float64, nA, nC int) Config {
	u, err := pmw.NewUniverse([]string{"a", "c"}, []int{nA, nC}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Epsilon: eps, Delta: delta, Columns: fig1Cols, Universe: u,
		Families: []pmw.Family{pmw.Marginal([]int{0}), pmw.Marginal([]int{1})},
		Workers:  1,
	}
}

func newLedger(t testing.TB, eps, delta float64) *dp.Ledger {
	l, err := dp.NewLedger(dp.Budget{Epsilon: eps, Delta: delta})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestTwoTableDeltaTildeBounds checks Alg. 1's Δ̃ on many runs: the integer
// TLap never lowers the max degree, so Δ ≤ Δ̃ ≤ Δ + 2τ′ always; and the
// ledger records (ε/2, δ/2) for Δ̃ and (ε/2, δ/2) for PMW, adding to (ε, δ).
func TestTwoTableDeltaTildeBounds(t *testing.T) {
	const eps, delta = 1.0, 1e-6
	h, f := fig1(12, 4, true)
	tau, _ := dp.TDLapTau(eps/2, delta/2, 1)
	src := dp.NewSource()
	for run := 0; run < 200; run++ {
		l := newLedger(t, eps, delta)
		res, err := Run(context.Background(), src, h, f, fig1Config(t, eps, delta, 4, 3), l)
		if err != nil {
			t.Fatal(err)
		}
		if res.Algorithm != TwoTable {
			t.Fatalf("algorithm %q, want %q", res.Algorithm, TwoTable)
		}
		if res.DeltaTilde < 12 || res.DeltaTilde > float64(12+2*tau) || res.DeltaTilde != math.Trunc(res.DeltaTilde) {
			t.Fatalf("Δ̃ = %v is not an integer in [Δ, Δ+2τ′] = [12, %v]", res.DeltaTilde, 12+2*tau)
		}
		if rem := l.Remaining(); rem.Epsilon > 1e-9 || rem.Delta > 1e-15 {
			t.Fatalf("ledger left %+v unspent; the shares must add up to the total", rem)
		}
		spends := l.Spends()
		if len(spends) != 1 || len(spends[0].Parts) != 2 {
			t.Fatalf("ledger = %+v, want one join-as-one spend with two parts", spends)
		}
		for _, p := range spends[0].Parts {
			if math.Abs(p.Epsilon-eps/2) > 1e-12 || math.Abs(p.Delta-delta/2) > 1e-18 {
				t.Fatalf("part %q spends (%v, %v), want (ε/2, δ/2)", p.Mechanism, p.Epsilon, p.Delta)
			}
		}
	}
}

// TestOnlyPrivateRelationsMove: with R1 public, only tuples of R2 change,
// and each changes the join by a degree in R1; the max degree read must be
// R1's (n), never R2's.
func TestOnlyPrivateRelationsMove(t *testing.T) {
	h, err := hypergraph.New([]hypergraph.Relation{
		{Name: "r1", Attrs: map[string]string{"B": "b"}, Public: true},
		{Name: "r2", Attrs: map[string]string{"B": "b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeStats{rels: map[string][]tuple{}}
	for i := 0; i < 30; i++ {
		f.rels["r1"] = append(f.rels["r1"], tuple{"a": 0, "b": i % 3}) // degree 10
	}
	for i := 0; i < 50; i++ {
		f.rels["r2"] = append(f.rels["r2"], tuple{"b": 0, "c": 0}) // degree 50
	}
	res, err := Run(context.Background(), dp.NewSource(), h, f, fig1Config(t, 1, 1e-6, 1, 1), newLedger(t, 1, 1e-6))
	if err != nil {
		t.Fatal(err)
	}
	tau, _ := dp.TDLapTau(0.5, 0.5e-6, 1)
	if res.DeltaTilde < 10 || res.DeltaTilde > float64(10+2*tau) {
		t.Fatalf("Δ̃ = %v, want within [10, 10+2τ]: a tuple of private r2 changes the join by its degree in r1", res.DeltaTilde)
	}
}

// TestChargesBeforeReading: a ledger that cannot afford the run refuses it
// before a single statistic is read.
func TestChargesBeforeReading(t *testing.T) {
	h, f := fig1(5, 2, true)
	l := newLedger(t, 1, 1e-6)
	if err := l.Charge("earlier", dp.Budget{Epsilon: 0.5}, "basic composition", nil); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), dp.NewSource(), h, f, fig1Config(t, 1, 1e-6, 2, 1), l)
	if !errors.Is(err, dp.ErrBudgetExceeded) {
		t.Fatalf("err = %v, want ErrBudgetExceeded", err)
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("%d data accesses before the budget was refused", n)
	}
}

// TestOneTable: a single relation has Δ̃ = 1 exactly and PMW receives the
// whole budget.
func TestOneTable(t *testing.T) {
	h, err := hypergraph.New([]hypergraph.Relation{{Name: "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeStats{rels: map[string][]tuple{"r1": {{"a": 0}, {"a": 1}, {"a": 1}}}}
	u, _ := pmw.NewUniverse([]string{"a"}, []int{2}, 0)
	l := newLedger(t, 2, 1e-5)
	res, err := Run(context.Background(), dp.NewSource(), h, f, Config{
		Epsilon: 2, Delta: 1e-5, Columns: []spec.ColumnRef{{Table: "r1", Column: "a"}}, Universe: u,
		Families: []pmw.Family{pmw.Marginal([]int{0})},
	}, l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Algorithm != OneTable || res.DeltaTilde != 1 {
		t.Fatalf("got %q with Δ̃ = %v, want one-table with Δ̃ = 1", res.Algorithm, res.DeltaTilde)
	}
	parts := l.Spends()[0].Parts
	if len(parts) != 1 || parts[0].Epsilon != 2 {
		t.Fatalf("parts = %+v, want PMW with the whole ε = 2", parts)
	}
}

// TestGeneralJoinUsesResidualSensitivity: on a three-relation path Alg. 3
// gives RS^β ≤ Δ̃ ≤ RS^β·e^{2τ(ε/2,δ/2,β)}, with RS^β computed
// independently from the same brute-force statistics.
func TestGeneralJoinUsesResidualSensitivity(t *testing.T) {
	const eps, delta = 1.0, 1e-6
	h, err := hypergraph.New([]hypergraph.Relation{
		{Name: "r1", Attrs: map[string]string{"A": "a"}},
		{Name: "r2", Attrs: map[string]string{"A": "a", "B": "b"}},
		{Name: "r3", Attrs: map[string]string{"B": "b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeStats{rels: map[string][]tuple{}}
	for i := 0; i < 20; i++ {
		f.rels["r1"] = append(f.rels["r1"], tuple{"a": i % 4, "x": i % 2})
		f.rels["r2"] = append(f.rels["r2"], tuple{"a": i % 3, "b": i % 5})
		f.rels["r3"] = append(f.rels["r3"], tuple{"b": i % 2, "y": i % 3})
	}
	u, _ := pmw.NewUniverse([]string{"x", "y"}, []int{2, 3}, 0)
	// Beta 0 is the paper's β = ε/ln(1/δ); an explicit public β replaces it.
	for _, cfgBeta := range []float64{0, 0.02} {
		beta := cfgBeta
		if beta == 0 {
			beta = eps / math.Log(1/delta)
		}
		sens, err := residual.Compute(context.Background(), h, f, beta)
		if err != nil {
			t.Fatal(err)
		}
		pad, err := dp.NewLogPad(eps/2, delta/2, beta)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Epsilon: eps, Delta: delta, Beta: cfgBeta, Universe: u,
			Columns:  []spec.ColumnRef{{Table: "r1", Column: "x"}, {Table: "r3", Column: "y"}},
			Families: []pmw.Family{pmw.Marginal([]int{0, 1})}}
		for run := 0; run < 50; run++ {
			l := newLedger(t, eps, delta)
			res, err := Run(context.Background(), dp.NewSource(), h, f, cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			if res.Algorithm != General {
				t.Fatalf("algorithm %q, want %q", res.Algorithm, General)
			}
			lo, hi := sens.RS, math.Ceil(math.Max(sens.RS, 1)*math.Exp(pad.MaxLogFactor()))
			if res.DeltaTilde < lo || res.DeltaTilde > hi || res.DeltaTilde != math.Trunc(res.DeltaTilde) {
				t.Fatalf("β = %v: Δ̃ = %v is not an integer in [RS^β, RS^β·e^{g(2τ′+2)}] = [%v, %v]", beta, res.DeltaTilde, lo, hi)
			}
			if got := l.Spends()[0].Parts[0].Details["beta"]; got != beta {
				t.Fatalf("ledger records β = %v, want %v", got, beta)
			}
		}
	}
}

// TestInvalidConfig covers parameter validation.
func TestInvalidConfig(t *testing.T) {
	h, f := fig1(3, 2, true)
	for _, tc := range []struct {
		name       string
		eps, delta float64
	}{
		{"zero epsilon", 0, 1e-6}, {"NaN epsilon", math.NaN(), 1e-6}, {"Inf epsilon", math.Inf(1), 1e-6},
		{"zero delta", 1, 0}, {"delta one", 1, 1}, {"NaN delta", 1, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fig1Config(t, 1, 1e-6, 2, 1)
			cfg.Epsilon, cfg.Delta = tc.eps, tc.delta
			l := newLedger(t, 1, 1e-6)
			if _, err := Run(context.Background(), dp.NewSource(), h, f, cfg, l); !errors.Is(err, dp.ErrInvalidParameter) {
				t.Fatalf("err = %v, want ErrInvalidParameter", err)
			}
		})
	}
}

// TestPlanRunsOnce: Prepare charges the budget without reading data, and a
// plan's budget can be spent by one run only.
func TestPlanRunsOnce(t *testing.T) {
	h, f := fig1(6, 2, true)
	l := newLedger(t, 1, 1e-6)
	p, err := Prepare(h, fig1Config(t, 1, 1e-6, 2, 1), l)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("Prepare read the data %d times", n)
	}
	if rem := l.Remaining(); rem.Epsilon > 1e-12 {
		t.Fatalf("Prepare left ε = %v uncharged", rem.Epsilon)
	}
	if _, err := p.Run(context.Background(), dp.NewSource(), f); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), dp.NewSource(), f); !errors.Is(err, ErrPlanUsed) {
		t.Fatalf("second Run: err = %v, want ErrPlanUsed", err)
	}
}

// TestInvalidBeta: β must be finite and ≥ 0 (0 selects the default).
func TestInvalidBeta(t *testing.T) {
	h, f := fig1(3, 2, true)
	for _, beta := range []float64{-1, math.NaN(), math.Inf(1)} {
		cfg := fig1Config(t, 1, 1e-6, 2, 1)
		cfg.Beta = beta
		if _, err := Run(context.Background(), dp.NewSource(), h, f, cfg, newLedger(t, 1, 1e-6)); !errors.Is(err, dp.ErrInvalidParameter) {
			t.Errorf("β = %v: err = %v, want ErrInvalidParameter", beta, err)
		}
	}
}

// TestBetaTooLargeRefusedBeforeData: a β whose noise factor could exceed
// 2⁴⁰ (at ε = 1 the product overflowed float64 from β ≈ 13) is refused by
// Prepare, before any statistic is read, with a suggested β.
func TestBetaTooLargeRefusedBeforeData(t *testing.T) {
	h, err := hypergraph.New([]hypergraph.Relation{
		{Name: "r1", Attrs: map[string]string{"A": "a"}},
		{Name: "r2", Attrs: map[string]string{"A": "a", "B": "b"}},
		{Name: "r3", Attrs: map[string]string{"B": "b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := pmw.NewUniverse([]string{"x"}, []int{2}, 0)
	for _, tc := range []struct {
		beta float64
		ok   bool
	}{{0, true}, {0.3, true}, {13, false}, {1e6, false}} {
		cfg := Config{Epsilon: 1, Delta: 1e-6, Beta: tc.beta, Universe: u,
			Columns: []spec.ColumnRef{{Table: "r1", Column: "x"}}, Families: []pmw.Family{pmw.Marginal([]int{0})}}
		_, err := Prepare(h, cfg, newLedger(t, 1, 1e-6))
		if tc.ok && err != nil {
			t.Errorf("β = %v refused: %v", tc.beta, err)
		}
		if !tc.ok && (!errors.Is(err, dp.ErrInvalidParameter) || !strings.Contains(err.Error(), "choose beta ≤")) {
			t.Errorf("β = %v: err = %v, want a refusal suggesting a β", tc.beta, err)
		}
	}
}
