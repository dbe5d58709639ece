package multi

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"math"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/relational/ipopt"
)

// TestContributionsOracle checks the per-unit contribution vectors of a
// GROUP BY revenue query and of a filtered count against hand-written SQL
// over the raw tables: for every (customer, nation) the sum of ψ in grid
// steps, and the totals per group.
func TestContributionsOracle(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	qs := []*relational.Query{
		mustParse(t, e, s, "SELECT c_nationkey, SUM(l_extendedprice * (1 - l_discount)) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND o_orderkey = l_orderkey GROUP BY c_nationkey"),
		mustParse(t, e, s, "SELECT COUNT(*) FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode = 'AIR' AND o_orderdate < DATE '1995-01-01'"),
	}
	g := relational.Quantum(relational.Sum, 105000)
	entries, d, err := Contributions(ctx, e, s, qs, "customer", g)
	if err != nil {
		t.Fatal(err)
	}
	if d != 26 {
		t.Fatalf("d = %d, want 25 nations + 1", d)
	}
	// Oracle: per-coordinate totals and the number of (unit, coordinate)
	// pairs with a non-zero contribution.
	want := map[int]float64{}
	pairs := 0
	err = e.Aggregate(ctx, `SELECT c.c_nationkey, c.c_custkey, SUM(CAST(round(l.l_extendedprice * (1 - l.l_discount) / `+floatLit(g)+`) AS BIGINT))
		FROM customer c JOIN orders o ON c.c_custkey = o.o_custkey JOIN lineitem l ON l.l_orderkey = o.o_orderkey GROUP BY 1, 2`, nil,
		func(r *sql.Rows) error {
			var nation, cust int64
			var v float64
			if err := r.Scan(&nation, &cust, &v); err != nil {
				return err
			}
			want[int(nation)] += v
			pairs++
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Aggregate(ctx, `SELECT o.o_custkey, COUNT(*) FROM orders o JOIN lineitem l ON l.l_orderkey = o.o_orderkey
		WHERE l.l_shipmode = 'AIR' AND o.o_orderdate < DATE '1995-01-01' GROUP BY 1`, nil,
		func(r *sql.Rows) error {
			var cust int64
			var v float64
			if err := r.Scan(&cust, &v); err != nil {
				return err
			}
			want[25] += v
			pairs++
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]float64{}
	for _, en := range entries {
		got[en.Coord] += en.Psi
	}
	if len(entries) != pairs {
		t.Fatalf("%d (unit, coordinate) entries, oracle %d", len(entries), pairs)
	}
	for k := 0; k < d; k++ {
		if got[k] != want[k] || math.IsNaN(got[k]) {
			t.Fatalf("coordinate %d: Σ ψ = %v grid steps, oracle %v", k, got[k], want[k])
		}
	}
}

// noDataDB parses through a real engine but fails every data access.
type noDataDB struct {
	relational.Parser
	relational.KeyTexter
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
// ledger stops before any data access, and that a self-join (units
// customer and supplier: a lineitem references one of each) is refused
// without the ipopt tag, and with it stops at the ledger — in both cases
// before reading data.
func TestAnswerChargesBeforeReading(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	q := mustParse(t, e, s, "SELECT c_nationkey, COUNT(*) FROM customer, orders WHERE c_custkey = o_custkey GROUP BY c_nationkey")
	db := &noDataDB{Parser: e, KeyTexter: e}
	l, _ := dp.NewLedger(dp.Budget{Epsilon: 0.5, Delta: 1e-6})
	_, err := Answer(ctx, db, dp.NewSeededSource(1), s, []*relational.Query{q}, Options{Budget: dp.Budget{Epsilon: 1, Delta: 1e-6}, Units: []string{"customer"}}, l)
	if !errors.Is(err, dp.ErrBudgetExceeded) || db.touched != 0 {
		t.Fatalf("error %v after %d data accesses; want ErrBudgetExceeded and none", err, db.touched)
	}
	sj := mustParse(t, e, s, "SELECT s_nationkey, COUNT(*) FROM customer, orders, lineitem, supplier WHERE c_custkey = o_custkey AND o_orderkey = l_orderkey AND l_suppkey = s_suppkey GROUP BY s_nationkey")
	l, _ = dp.NewLedger(dp.Budget{Epsilon: 0.5, Delta: 1e-6})
	_, err = Answer(ctx, db, dp.NewSeededSource(1), s, []*relational.Query{sj}, Options{Budget: dp.Budget{Epsilon: 1, Delta: 1e-6}, Units: []string{"customer", "supplier"}}, l)
	want := dp.ErrBudgetExceeded
	if !ipopt.Available {
		want = ErrNeedsIpopt
	}
	if !errors.Is(err, want) || db.touched != 0 {
		t.Fatalf("self-join: error %v after %d data accesses; want %v and none", err, db.touched, want)
	}
}

// TestAnswerTPCH runs Answer on a GROUP BY over the 25 nations: 25 integer
// answers, one spend of the whole budget, and answers within 5 noise
// scales plus the clipping bias of the true totals (ε = 8: the radius is
// near DS, few customers are clipped). The oracle is SQL over the raw
// tables.
func TestAnswerTPCH(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	q := mustParse(t, e, s, "SELECT c_nationkey, COUNT(*) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND o_orderkey = l_orderkey GROUP BY c_nationkey")
	budget := dp.Budget{Epsilon: 8, Delta: 1e-7}
	l, _ := dp.NewLedger(budget)
	res, err := Answer(ctx, e, dp.NewSeededSource(3), s, []*relational.Query{q}, Options{Budget: budget, Units: []string{"customer"}}, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 25 || len(l.Spends()) != 1 {
		t.Fatalf("%d answers, %d spends; want 25 and 1", len(res), len(l.Spends()))
	}
	truth := map[string]float64{}
	err = e.Aggregate(ctx, `SELECT CAST(c.c_nationkey AS VARCHAR), COUNT(*) FROM customer c JOIN orders o ON c.c_custkey = o.o_custkey JOIN lineitem l ON l.l_orderkey = o.o_orderkey GROUP BY 1`, nil,
		func(r *sql.Rows) error {
			var k string
			var v float64
			if err := r.Scan(&k, &v); err != nil {
				return err
			}
			truth[k] = v
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	sq := 0.0
	for _, r := range res {
		diff := float64(r.Value) - truth[r.Group["customer.c_nationkey"]]
		sq += diff * diff
	}
	rel := math.Sqrt(sq) / norm(truth)
	t.Logf("relative ℓ2 error %.4f, σ = %v, %s", rel, *res[0].NoiseScale, res[0].Mechanism)
	if rel > 0.1 {
		t.Fatalf("relative ℓ2 error %v > 10%%", rel)
	}
}

func norm(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v * v
	}
	return math.Sqrt(s)
}

// TestCheck checks the public pre-flight of Answer that synth answer's
// default mechanism choice uses: each refusal is the one Answer would give,
// without reading data.
func TestCheck(t *testing.T) {
	e, s := tpch(t)
	count := mustParse(t, e, s, "SELECT c_nationkey, COUNT(*) FROM customer, orders WHERE c_custkey = o_custkey GROUP BY c_nationkey")
	signed := mustParse(t, e, s, "SELECT SUM(l_discount - 1) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND o_orderkey = l_orderkey")
	sj := mustParse(t, e, s, "SELECT s_nationkey, COUNT(*) FROM customer, orders, lineitem, supplier WHERE c_custkey = o_custkey AND o_orderkey = l_orderkey AND l_suppkey = s_suppkey GROUP BY s_nationkey")
	ok := dp.Budget{Epsilon: 1, Delta: 1e-6}
	sjWant := error(nil)
	if !ipopt.Available {
		sjWant = ErrNeedsIpopt
	}
	tests := []struct {
		name    string
		queries []*relational.Query
		opt     Options
		want    error // nil: accepted
	}{
		{"accepted", []*relational.Query{count}, Options{Budget: ok, Units: []string{"customer"}}, nil},
		{"δ = 0", []*relational.Query{count}, Options{Budget: dp.Budget{Epsilon: 1}, Units: []string{"customer"}}, ErrInvalid},
		{"no unit", []*relational.Query{count}, Options{Budget: ok}, ErrInvalid},
		{"no query", nil, Options{Budget: ok, Units: []string{"customer"}}, ErrInvalid},
		{"negative summand", []*relational.Query{signed}, Options{Budget: ok, Units: []string{"customer"}}, ErrInvalid},
		{"self-join", []*relational.Query{sj}, Options{Budget: ok, Units: []string{"customer", "supplier"}}, sjWant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(s, tt.queries, tt.opt)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("Check: %v, want %v", err, tt.want)
			}
		})
	}
}

// TestAnswerClampsAtZero answers counts far below the noise (orders of the
// first four days of 1992 by nation, ε = 0.1: σ in the thousands) and
// checks that no answer or lower bound is negative, the lower bound is
// below the value, and the threshold r̃ is published.
func TestAnswerClampsAtZero(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	q := mustParse(t, e, s, "SELECT c_nationkey, COUNT(*) FROM customer, orders WHERE c_custkey = o_custkey AND o_orderdate < DATE '1992-01-05' GROUP BY c_nationkey")
	budget := dp.Budget{Epsilon: 0.1, Delta: 1e-6}
	l, _ := dp.NewLedger(budget)
	res, err := Answer(ctx, e, dp.NewSeededSource(5), s, []*relational.Query{q}, Options{Budget: budget, Units: []string{"customer"}}, l)
	if err != nil {
		t.Fatal(err)
	}
	zeros := 0
	for _, r := range res {
		if r.Value < 0 || r.LowerBound95 == nil || *r.LowerBound95 < 0 || *r.LowerBound95 > r.Value || r.Threshold == nil || r.NoiseBound95 == nil {
			t.Fatalf("answer %+v: want 0 ≤ lower ≤ value, a noise bound and the threshold", r)
		}
		if r.Value == 0 {
			zeros++
		}
	}
	if zeros == 0 {
		t.Fatal("no answer clamped at this seed: the test shows nothing")
	}
}

// TestContributionsCategoricalGroups: a categorical GROUP BY column is
// grouped on its cell and named by its category; every coordinate's total
// and the number of (unit, coordinate) pairs equal hand-written SQL
// grouped by the category's label (a shifted cell-to-label map fails it).
func TestContributionsCategoricalGroups(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	qs := []*relational.Query{mustParse(t, e, s, "SELECT l_shipmode, COUNT(*) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND o_orderkey = l_orderkey GROUP BY l_shipmode")}
	entries, d, err := Contributions(ctx, e, s, qs, "customer", 1)
	if err != nil {
		t.Fatal(err)
	}
	coords := Coordinates(s, qs)
	want := map[string]float64{}
	pairs := 0
	err = e.Aggregate(ctx, `SELECT CAST(l.l_shipmode AS VARCHAR), o.o_custkey, COUNT(*) FROM orders o JOIN lineitem l ON l.l_orderkey = o.o_orderkey GROUP BY 1, 2`, nil,
		func(r *sql.Rows) error {
			var mode string
			var cust int64
			var v float64
			if err := r.Scan(&mode, &cust, &v); err != nil {
				return err
			}
			want[mode] += v
			pairs++
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, en := range entries {
		got[coords[en.Coord].Group[0].Value] += en.Psi
	}
	if len(entries) != pairs || d != len(coords) {
		t.Fatalf("%d (unit, coordinate) entries over %d coordinates, oracle %d over %d", len(entries), d, pairs, len(coords))
	}
	if !maps.Equal(got, want) || len(want) < 2 {
		t.Errorf("per-mode totals %v, oracle %v", got, want)
	}
}
