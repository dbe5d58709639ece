package multi

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/relational/ipopt"
)

// TestExperimentSelfJoin is the self-join experiment of issue 15: revenue
// by customer nation (d = 25) over customer ⋈ orders ⋈ lineitem ⋈
// supplier with units customer and supplier — every join result
// references two units (an implicit self-join on the virtual user
// relation, Dong–Sun–Yi Example 3.2) — on TPC-H SF 0.01, orders from
// 1996-01-01 to SYNTH_SELFJOIN_END (default 1996-01-31),
// ε ∈ {4, 8}, δ = 10⁻⁷: Alg. 2 (polynomial, Ipopt) against R2T with ε/d
// per group (two units: exact max flow), relative ℓ2 error (median of
// 3 runs), QCQPs solved and solver time per program. Needs -tags ipopt and
// SYNTH_MULTI_EXPERIMENTS=1.
func TestExperimentSelfJoin(t *testing.T) {
	if os.Getenv("SYNTH_MULTI_EXPERIMENTS") == "" || !ipopt.Available {
		t.Skip("set SYNTH_MULTI_EXPERIMENTS=1 and build with -tags ipopt")
	}
	e, s := tpch(t)
	ctx := context.Background()
	end := "1996-01-31"
	if v := os.Getenv("SYNTH_SELFJOIN_END"); v != "" {
		end = v // a longer window: more join groups, larger QCQPs
	}
	q := mustParse(t, e, s, "SELECT c_nationkey, SUM(l_extendedprice * (1 - l_discount)) FROM customer, orders, lineitem, supplier WHERE c_custkey = o_custkey AND o_orderkey = l_orderkey AND l_suppkey = s_suppkey AND o_orderdate BETWEEN DATE '1996-01-01' AND DATE '"+end+"' GROUP BY c_nationkey")
	units := []string{"customer", "supplier"}
	b, _ := SumBound(s, q)
	g := relational.Quantum(relational.Sum, b)
	groups, d, err := JoinGroups(ctx, e, s, []*relational.Query{q}, units, g)
	if err != nil {
		t.Fatal(err)
	}
	truth := make([]float64, d)
	n := 0
	for _, jg := range groups {
		truth[jg.Coord] += jg.Psi * g
		for _, u := range jg.Units {
			n = max(n, u+1)
		}
	}
	tn := 0.0
	for _, v := range truth {
		tn += v * v
	}
	tn = math.Sqrt(tn)
	rel := func(v []int64) float64 {
		s := 0.0
		for k := range v {
			s += (float64(v[k]) - truth[k]) * (float64(v[k]) - truth[k])
		}
		return math.Sqrt(s) / tn
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%d join groups, %d units, d = %d, ‖Q‖ = %.4g\n\n| ε | Alg. 2 rel. ℓ2 | R2T ε/d rel. ℓ2 | QCQPs per run | solver time per QCQP | Alg. 2 time | R2T time |\n|---|---|---|---|---|---|---|\n", len(groups), n, d, tn)
	seed := uint64(100)
	for _, eps := range []float64{4, 8} {
		var ours, comp, perProg, tOurs, tComp []float64
		progs := 0
		for r := 0; r < 3; r++ {
			seed++
			t0 := time.Now()
			res, err := RunSelfJoin(ctx, dp.NewSeededSource(seed), groups, d, Config{Epsilon: eps, Delta: 1e-7, GS: relational.DefaultGS * b, Quantum: g})
			if err != nil {
				t.Fatal(err)
			}
			tOurs = append(tOurs, time.Since(t0).Seconds())
			ours = append(ours, rel(res.Values))
			perProg = append(perProg, res.SolveTime.Seconds()/float64(res.Programs))
			progs = res.Programs
			t.Logf("ε=%g run %d: r̃ = %v, radii evaluated %v (skipped %d)", eps, r, res.Radius, res.Trace.Evaluated, res.Trace.Skipped)
			t1 := time.Now()
			src := dp.NewSeededSource(seed + 1000)
			v := make([]int64, d)
			for k := 0; k < d; k++ {
				var cs []relational.Contribution
				for _, jg := range groups {
					if jg.Coord == k {
						cs = append(cs, relational.Contribution{Units: jg.Units, Psi: jg.Psi})
					}
				}
				// Two unit relations in one id space: split the ids back
				// per unit for the max flow (customers first, then
				// suppliers, as JoinGroups numbers them on first sight —
				// any injective renumbering per side works).
				cs2, counts := splitUnits(cs)
				tr, err := relational.NewTruncation(cs2, counts)
				if err != nil {
					t.Fatal(err)
				}
				rr, err := relational.RaceToTheTop(ctx, src, tr, relational.R2TConfig{Epsilon: eps / float64(d), GS: relational.DefaultGS * b, Quantum: g, Integral: true})
				if err != nil {
					t.Fatal(err)
				}
				v[k] = rr.Value
			}
			tComp = append(tComp, time.Since(t1).Seconds())
			comp = append(comp, rel(v))
		}
		fmt.Fprintf(&table, "| %g | %.3f | %.3f | %d | %.2f s | %.1f s | %.2f s |\n", eps, median(ours), median(comp), progs, median(perProg), median(tOurs), median(tComp))
	}
	t.Log(table.String())
}

// splitUnits renumbers two-unit contributions (ids from one shared space,
// position 0 a customer, position 1 a supplier) densely per position.
func splitUnits(cs []relational.Contribution) ([]relational.Contribution, []int) {
	ids := []map[int]int{{}, {}}
	out := make([]relational.Contribution, len(cs))
	for i, c := range cs {
		u := make([]int, 2)
		for p := 0; p < 2; p++ {
			id, ok := ids[p][c.Units[p]]
			if !ok {
				id = len(ids[p])
				ids[p][c.Units[p]] = id
			}
			u[p] = id
		}
		out[i] = relational.Contribution{Units: u, Psi: c.Psi}
	}
	return out, []int{len(ids[0]), len(ids[1])}
}
