package relational

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synth-dp/synth/dp"
)

// accuracyQueries are the TPC-H workloads of the accuracy table: the
// issue's Q3-, Q12- and revenue-like queries, and the R2T paper's own Q12
// (unit orders) and Q18 (SUM(l_quantity), unit customer) for comparison
// with its published figures.
var accuracyQueries = []struct {
	name, sql string
	unit      string
	gs        float64 // GS_Q of a count (0: DefaultGS)
}{
	{"Q3-like count", "SELECT COUNT(*) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND c_mktsegment = 'BUILDING' AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'", "customer", 0},
	{"Q12-like count by shipmode", "SELECT l_shipmode, COUNT(*) FROM orders, lineitem WHERE o_orderkey = l_orderkey GROUP BY l_shipmode", "customer", 0},
	{"revenue by segment", "SELECT c_mktsegment, SUM(l_extendedprice * (1 - l_discount)) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey GROUP BY c_mktsegment", "customer", 0},
	{"R2T paper Q12 (orders ⋈ lineitem)", "SELECT COUNT(*) FROM orders, lineitem WHERE o_orderkey = l_orderkey", "orders", 0},
	{"R2T paper Q18 (SUM l_quantity)", "SELECT SUM(l_quantity) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey", "customer", 0},
	// The paper's GS_Q = 10⁶ for the sum itself: 10⁶/50 for a count.
	{"R2T paper Q18, GS_Q = 10⁶", "SELECT SUM(l_quantity) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey", "customer", 1e6 / 50},
}

// TestAccuracyTable prints the relative error (median of 10 runs of
// Σ_g |answer_g − true_g| / Σ_g true_g) and the median time per run
// (statistics and mechanism, data already loaded) of both mechanisms on
// TPC-H SF 0.01 at ε ∈ {0.8, 1, 4} (δ = 10⁻⁶ for residual sensitivity).
// It runs only with SYNTH_ANSWER_ACCURACY=1 (about a minute).
func TestAccuracyTable(t *testing.T) {
	if os.Getenv("SYNTH_ANSWER_ACCURACY") == "" {
		t.Skip("set SYNTH_ANSWER_ACCURACY=1 to print the accuracy table")
	}
	e, s := tpch(t)
	ctx := context.Background()
	var b strings.Builder
	fmt.Fprintf(&b, "\n| query | mechanism | ε | true total | rel. error (median of 10) | time per run (median) |\n|---|---|---|---|---|---|\n")
	for _, aq := range accuracyQueries {
		q, err := Parse(ctx, e, s, aq.sql)
		if err != nil {
			t.Fatal(err)
		}
		truth := 0.0
		var truths []float64
		for _, g := range Groups(s, q) {
			in, err := newInstance(ctx, e, s, q, g)
			if err != nil {
				t.Fatal(err)
			}
			v, err := in.answer(ctx)
			in.close()
			if err != nil {
				t.Fatal(err)
			}
			truths = append(truths, v)
			truth += v
		}
		for _, mech := range []string{"RS", "R2T", "R2T base 4"} {
			paper := strings.HasPrefix(aq.name, "R2T paper")
			if (mech == "RS" && paper) || (mech == "R2T base 4" && !paper) {
				continue
			}
			for _, eps := range []float64{0.8, 1, 4} {
				var errs []float64
				var times []time.Duration
				for run := 0; run < 10; run++ {
					opt := Options{Budget: dp.Budget{Epsilon: eps, Delta: 1e-6}, GS: aq.gs}
					if mech != "RS" {
						opt.Units = []string{aq.unit}
					}
					if mech == "R2T base 4" {
						opt.Base = 4
					}
					l, _ := dp.NewLedger(opt.Budget)
					start := time.Now()
					res, err := Answer(ctx, e, dp.NewSeededSource(uint64(run+1)), s, []*Query{q}, opt, l)
					if err != nil {
						t.Fatal(err)
					}
					times = append(times, time.Since(start))
					sum := 0.0
					for i, r := range res {
						sum += math.Abs(float64(r.Value) - truths[i])
					}
					errs = append(errs, sum/truth)
				}
				slices.Sort(errs)
				slices.Sort(times)
				name := mech
				if mech != "RS" {
					name += " (unit " + aq.unit + ")"
				}
				fmt.Fprintf(&b, "| %s | %s | %g | %.0f | %.4g | %v |\n", aq.name, name, eps, truth,
					(errs[4]+errs[5])/2, ((times[4] + times[5]) / 2).Round(time.Millisecond))
			}
		}
	}
	t.Log(b.String())
}
