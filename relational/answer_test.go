package relational

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
)

// noDataDB is a DB that parses through a real engine but fails every data
// access, recording it.
type noDataDB struct {
	Parser
	KeyTexter
	touched int
}

var errTouched = errors.New("data touched")

func (d *noDataDB) MaxBoundaryCount(context.Context, *hypergraph.Hypergraph, hypergraph.Set) (int64, error) {
	d.touched++
	return 0, errTouched
}
func (d *noDataDB) CreateView(context.Context, string, string) error { d.touched++; return errTouched }
func (d *noDataDB) DropView(context.Context, string) error           { return nil }
func (d *noDataDB) Aggregate(context.Context, string, []any, func(*sql.Rows) error) error {
	d.touched++
	return errTouched
}

// TestAnswerChargesBeforeReading checks that a run whose budget exceeds the
// ledger's stops before any data access.
func TestAnswerChargesBeforeReading(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	q, err := Parse(ctx, e, s, "SELECT l_shipmode, COUNT(*) FROM lineitem GROUP BY l_shipmode")
	if err != nil {
		t.Fatal(err)
	}
	db := &noDataDB{Parser: e, KeyTexter: e}
	for _, units := range [][]string{nil, {"customer"}} {
		if units != nil {
			q, _ = Parse(ctx, e, s, "SELECT l_shipmode, COUNT(*) FROM orders, lineitem WHERE o_orderkey = l_orderkey GROUP BY l_shipmode")
		}
		l, _ := dp.NewLedger(dp.Budget{Epsilon: 0.5, Delta: 1e-6})
		_, err = Answer(ctx, db, dp.NewSeededSource(1), s, []*Query{q}, Options{Budget: dp.Budget{Epsilon: 1, Delta: 1e-6}, Units: units}, l)
		if !errors.Is(err, dp.ErrBudgetExceeded) || db.touched != 0 {
			t.Fatalf("units %v: error %v after %d data accesses; want ErrBudgetExceeded and none", units, err, db.touched)
		}
	}
}

// TestAnswerRefusesBeforeReading: δ = 0 for the residual-sensitivity
// mechanism, and a budget so thin that RS^β's search would be too long,
// are refused with nothing charged and no data read.
func TestAnswerRefusesBeforeReading(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	q, err := Parse(ctx, e, s, "SELECT COUNT(*) FROM orders, lineitem WHERE o_orderkey = l_orderkey")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		budget dp.Budget
		want   error
	}{
		{"delta 0", dp.Budget{Epsilon: 1}, ErrPureRS},
		{"search too long", dp.Budget{Epsilon: 1e-6, Delta: 1e-6}, residual.ErrSearchTooLarge},
	} {
		db := &noDataDB{Parser: e, KeyTexter: e}
		l, _ := dp.NewLedger(dp.Budget{Epsilon: 1, Delta: 1e-6})
		_, err := Answer(ctx, db, dp.NewSeededSource(1), s, []*Query{q}, Options{Budget: c.budget}, l)
		if !errors.Is(err, c.want) || db.touched != 0 || l.Remaining() != l.Total() {
			t.Errorf("%s: error %v after %d data accesses, remaining %v of %v; want %v, none, nothing charged",
				c.name, err, db.touched, l.Remaining(), l.Total(), c.want)
		}
	}
}

// TestAnswerGroupsFromDomain checks that a GROUP BY answers every group of
// the declared domain, also those the selection leaves empty, each with a
// 1/d share of the budget.
func TestAnswerGroupsFromDomain(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	q, err := Parse(ctx, e, s, "SELECT l_shipmode, COUNT(*) FROM lineitem WHERE l_shipmode IN ('MAIL', 'SHIP') GROUP BY l_shipmode")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := dp.NewLedger(dp.Budget{Epsilon: 1, Delta: 1e-6})
	res, err := Answer(ctx, e, dp.NewSeededSource(1), s, []*Query{q}, Options{Budget: dp.Budget{Epsilon: 1, Delta: 1e-6}}, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 7 || len(l.Spends()) != 7 {
		t.Fatalf("%d answers, %d spends; want 7 (the declared ship modes)", len(res), len(l.Spends()))
	}
	for _, r := range res {
		if r.Epsilon != 1.0/7 || r.Delta != 1e-6/7 {
			t.Fatalf("share (%v, %v), want (1/7, 1e-6/7)", r.Epsilon, r.Delta)
		}
	}
}

// TestRSErrorBoundCoverage checks the published 95% error bound of the
// residual-sensitivity mechanism with discrete Laplace and Gaussian noise,
// and its one-sided lower bound: over 2000 runs each must hold in ≥ 95% of
// them. A check fails when its count of misses has binomial tail below
// 10⁻⁶ under p = 0.05, so the test (four checks) fails falsely with
// probability ≤ 4·10⁻⁶.
func TestRSErrorBoundCoverage(t *testing.T) {
	const n = 2000
	for _, noise := range []Noise{NoiseLaplace, NoiseGaussian} {
		src := dp.NewSeededSource(7)
		miss, lowMiss := 0, 0
		for i := 0; i < n; i++ {
			r, err := ReleaseRS(src, 1000, 12, 12, RSConfig{Epsilon: 1, Delta: 1e-6, Noise: noise, Bound: 1, Integral: true})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(r.Value)-1000) > r.ErrorBound95 {
				miss++
			}
			if float64(r.Value)-r.LowerGap95 > 1000 {
				lowMiss++
			}
			if !(r.PaddedRS >= 12) {
				t.Fatalf("padded RS %v below RS^β = 12", r.PaddedRS)
			}
		}
		if binomialTail(n, miss, 0.05) < 1e-6 {
			t.Fatalf("%s: the 95%% error bound missed in %d of %d runs", noise, miss, n)
		}
		if binomialTail(n, lowMiss, 0.05) < 1e-6 {
			t.Fatalf("%s: the 95%% lower bound exceeded the truth in %d of %d runs", noise, lowMiss, n)
		}
	}
}

// TestSetValue checks the post-processing of a raw DP value: the lower
// bound is ⌊raw − below⌋, and both are clamped at 0 only for a
// non-negative query.
func TestSetValue(t *testing.T) {
	tests := []struct {
		name        string
		raw         int64
		below       float64
		nonNegative bool
		value       int64
		lower       int64
	}{
		{"positive", 100, 20.5, true, 100, 79},
		{"lower clamped", 10, 20.5, true, 10, 0},
		{"value clamped", -50, 20, true, 0, 0},
		{"signed sum kept", -50, 20, false, -50, -70},
		{"no gap", 7, 0, true, 7, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Result
			r.SetValue(tt.raw, tt.below, tt.nonNegative)
			if r.Value != tt.value || r.LowerBound95 == nil || *r.LowerBound95 != tt.lower {
				t.Fatalf("value %d, lower %v; want %d, %d", r.Value, r.LowerBound95, tt.value, tt.lower)
			}
		})
	}
}

// TestAnswerNonNegative runs the residual-sensitivity mechanism on a small
// count of the three-table join (noise scale ≫ the count: about half the
// raw values fall below 0) and checks that no answer or lower bound is
// negative, and that a signed SUM is not clamped.
func TestAnswerNonNegative(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	q, err := Parse(ctx, e, s, "SELECT l_shipmode, COUNT(*) FROM customer c, orders o, lineitem l WHERE o.o_custkey = c.c_custkey AND l.l_orderkey = o.o_orderkey AND o.o_orderdate < DATE '1992-01-05' GROUP BY l_shipmode")
	if err != nil {
		t.Fatal(err)
	}
	if !q.NonNegative(s) {
		t.Fatal("a COUNT is not NonNegative")
	}
	budget := dp.Budget{Epsilon: 1, Delta: 1e-6}
	l, _ := dp.NewLedger(budget)
	res, err := Answer(ctx, e, dp.NewSeededSource(11), s, []*Query{q}, Options{Budget: budget}, l)
	if err != nil {
		t.Fatal(err)
	}
	zeros := 0
	for _, r := range res {
		if r.Value < 0 || r.LowerBound95 == nil || *r.LowerBound95 < 0 || *r.LowerBound95 > r.Value {
			t.Fatalf("%v: value %d, lower %v", r.Group, r.Value, r.LowerBound95)
		}
		if r.Value == 0 {
			zeros++
		}
	}
	if zeros == 0 {
		t.Fatalf("no answer clamped at this seed: the test shows nothing")
	}
	signed, err := Parse(ctx, e, s, "SELECT SUM(l_discount - 0.05) FROM orders o, lineitem l WHERE l.l_orderkey = o.o_orderkey")
	if err != nil {
		t.Fatal(err)
	}
	if signed.NonNegative(s) {
		t.Fatal("SUM(l_discount − 0.05) may be negative on the declared domain")
	}
}
