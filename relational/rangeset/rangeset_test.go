package rangeset

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/audit"
	"github.com/synth-dp/synth/spec"
)

var adultOnce struct {
	sync.Once
	e   *engine.Engine
	s   *spec.Spec
	err error
}

func adult(t testing.TB) (*engine.Engine, *spec.Spec) {
	t.Helper()
	adultOnce.Do(func() {
		ctx := context.Background()
		s, err := spec.Load(filepath.Join("testdata", "adult.yaml"))
		if err != nil {
			adultOnce.err = err
			return
		}
		e, err := engine.Open(ctx, "")
		if err != nil {
			adultOnce.err = err
			return
		}
		if err := e.Load(ctx, s); err != nil {
			adultOnce.err = err
			return
		}
		adultOnce.e, adultOnce.s = e, s
	})
	if adultOnce.err != nil {
		t.Fatal(adultOnce.err)
	}
	return adultOnce.e, adultOnce.s
}

// TestParseBoxes checks the boxes of parsed queries: strict comparisons
// on integer columns become closed integer ends, numeric ones keep open
// ends, categories are points, unmentioned columns span the line.
func TestParseBoxes(t *testing.T) {
	e, s := adult(t)
	set, err := Parse(context.Background(), e, s, []string{
		`SELECT COUNT(*) FROM adult WHERE age > 30 AND age <= 40 AND "hours-per-week" BETWEEN 20 AND 45`,
		`SELECT COUNT(*) FROM adult WHERE fnlwgt < 100000 AND sex = 'Male'`,
		`SELECT COUNT(*) FROM adult`,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := func(a, b float64) Interval { return Interval{Bound{V: a}, Bound{V: b}} }
	want := []Box{
		{closed(31, 40), closed(20, 45), Full, Full},
		{Full, Full, Interval{Full.Lo, Bound{100000, -1}}, closed(1, 1)},
		{Full, Full, Full, Full},
	}
	if fmt.Sprint(set.Boxes) != fmt.Sprint(want) {
		t.Fatalf("boxes %v, want %v (columns %v)", set.Boxes, want, set.Columns)
	}
	for _, bad := range []string{
		`SELECT COUNT(*) FROM adult WHERE age > 30 OR age < 20`,
		`SELECT COUNT(*) FROM adult WHERE age <> 30`,
		`SELECT SUM(age) FROM adult`,
		`SELECT sex, COUNT(*) FROM adult GROUP BY sex`,
		`SELECT COUNT(*) FROM adult WHERE sex IN ('Male', 'Female')`,
	} {
		if _, err := Parse(context.Background(), e, s, []string{bad}); !errors.Is(err, ErrNotBox) {
			t.Errorf("%s: error %v, want ErrNotBox", bad, err)
		}
	}
}

// TestAnswerCountsAndCharges checks Answer end to end on Adult with a huge
// ε (scale max(S/10⁴, 2⁻¹¹) < 10⁻³: a non-zero noise has probability
// below e^{−1000}): the answers equal counts of separate SQL queries with the
// strict comparisons rewritten by hand, and the ledger holds one spend.
func TestAnswerCountsAndCharges(t *testing.T) {
	e, s := adult(t)
	ctx := context.Background()
	texts := []string{
		`SELECT COUNT(*) FROM adult WHERE age BETWEEN 20 AND 29`,
		`SELECT COUNT(*) FROM adult WHERE age > 25 AND "hours-per-week" < 40`,
		`SELECT COUNT(*) FROM adult WHERE sex = 'Female' AND age >= 60`,
	}
	set, err := Parse(ctx, e, s, texts)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := dp.NewLedger(dp.Budget{Epsilon: 1e4})
	res, err := Answer(ctx, e, dp.NewSeededSource(1), s, set, 1e4, Replace, l)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{8162, 0, 0}
	// The oracle counts with a separate query each.
	for i, q := range []string{
		`SELECT COUNT(*) FROM adult WHERE age >= 20 AND age <= 29`,
		`SELECT COUNT(*) FROM adult WHERE age >= 26 AND "hours-per-week" <= 39`,
		`SELECT COUNT(*) FROM adult WHERE sex = 'Female' AND age >= 60`,
	} {
		if err := e.Aggregate(ctx, q, nil, func(r *sql.Rows) error { return r.Scan(&want[i]) }); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range res {
		if r.Value != want[i] {
			t.Errorf("query %d: %d, oracle %d", i, r.Value, want[i])
		}
	}
	if len(l.Spends()) != 1 {
		t.Fatalf("%d spends, want 1", len(l.Spends()))
	}
}

// auditPair is a tuple-level neighbouring pair for the range mechanism: six
// 2-D queries, four of which share the point (5, 5); D has 20 records, D′
// adds one at (5, 5), changing the four counts by one each.
func auditPair() (boxes []Box, d, dPrime [][2]float64) {
	closed := func(a, b float64) Interval { return Interval{Bound{V: a}, Bound{V: b}} }
	boxes = []Box{
		{closed(0, 5), closed(0, 5)}, {closed(5, 9), closed(5, 9)}, {closed(3, 6), closed(4, 8)},
		{closed(5, 5), closed(0, 9)}, {closed(0, 4), closed(6, 9)}, {closed(7, 9), closed(0, 3)},
	}
	r := rand.New(rand.NewPCG(8, 9))
	for i := 0; i < 20; i++ {
		d = append(d, [2]float64{float64(r.IntN(10)), float64(r.IntN(10))})
	}
	dPrime = append(append([][2]float64(nil), d...), [2]float64{5, 5})
	return boxes, d, dPrime
}

func countIn(boxes []Box, pts [][2]float64) []int64 {
	out := make([]int64, len(boxes))
	for i, b := range boxes {
		for _, p := range pts {
			if b.Intersects(Box{{Bound{V: p[0]}, Bound{V: p[0]}}, {Bound{V: p[1]}, Bound{V: p[1]}}}) {
				out[i]++
			}
		}
	}
	return out
}

// TestAuditRelease audits the Laplace mechanism on a query set at ε = 1
// with the add/remove sensitivity (the max depth, 4 here) on [auditPair],
// through the sum of all released counts (which moves by 4); and checks
// that the same audit catches the planted bug "per-query sensitivity 1
// instead of the set's". False failure probability ≤ 10⁻⁶ per audit.
func TestAuditRelease(t *testing.T) {
	const eps = 1.0
	boxes, d, dPrime := auditPair()
	sens, depth := Sensitivity(boxes, AddRemove)
	if depth != 4 {
		t.Fatalf("max depth %d, want 4", depth)
	}
	run := func(s int) audit.Result {
		mech := func(pts [][2]float64) audit.Mechanism[float64] {
			counts := countIn(boxes, pts)
			return func(src dp.Source) float64 {
				v, _, err := Release(src, counts, s, eps)
				if err != nil {
					panic(err)
				}
				sum := int64(0)
				for _, x := range v {
					sum += x
				}
				return float64(sum)
			}
		}
		return audit.MustRunScalar(t, mech(d), mech(dPrime), 20_000, 0)
	}
	res := run(sens)
	t.Logf("sensitivity %d: %+v", sens, res)
	if res.EpsilonLowerBound > eps {
		t.Errorf("empirical ε lower bound %v > claimed ε = %v (event %s)", res.EpsilonLowerBound, eps, res.Event)
	}
	mut := run(1)
	t.Logf("per-query sensitivity 1: %+v", mut)
	if mut.EpsilonLowerBound <= eps {
		t.Errorf("the audit did not catch the per-query sensitivity: ε lower bound %v ≤ %v", mut.EpsilonLowerBound, eps)
	}
}

// TestAdultRangeSets is the Adult experiment: |Q| random
// age × hours-per-week ranges (|Q| = 100, 500, 2000), ε = 1; the mean
// absolute error of the Laplace mechanism with the set sensitivity
// (replace-one: min(|Q|, 2·depth); add/remove: depth) against |Q|-fold
// composition (each count ε/|Q| with sensitivity 1, scale |Q|/ε), median of
// 10 runs. The set mechanism must win whenever 2·depth < |Q|. |Q| = 2000
// runs with SYNTH_RANGESET_EXPERIMENTS=1.
func TestAdultRangeSets(t *testing.T) {
	e, s := adult(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(20, 21))
	table := "\n| |Q| | max depth | S (replace) | S (add/remove) | MAE set (replace) | MAE set (add/remove) | MAE composition |\n|---|---|---|---|---|---|---|\n"
	sizes := []int{100, 500}
	if os.Getenv("SYNTH_RANGESET_EXPERIMENTS") != "" {
		sizes = append(sizes, 2000) // parsing 2,000 queries through DuckDB takes ~10 s
	}
	for _, n := range sizes {
		var texts []string
		for i := 0; i < n; i++ {
			a1, a2 := 17+r.IntN(74), 17+r.IntN(74)
			h1, h2 := 1+r.IntN(99), 1+r.IntN(99)
			texts = append(texts, fmt.Sprintf(`SELECT COUNT(*) FROM adult WHERE age BETWEEN %d AND %d AND "hours-per-week" BETWEEN %d AND %d`,
				min(a1, a2), max(a1, a2), min(h1, h2), max(h1, h2)))
		}
		set, err := Parse(ctx, e, s, texts)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := trueCounts(ctx, e, set)
		if err != nil {
			t.Fatal(err)
		}
		sRep, depth := Sensitivity(set.Boxes, Replace)
		sAdd, _ := Sensitivity(set.Boxes, AddRemove)
		src := dp.NewSeededSource(uint64(n))
		mae := func(sens int) float64 {
			var runs []float64
			for k := 0; k < 10; k++ {
				v, _, err := Release(src, counts, sens, 1)
				if err != nil {
					t.Fatal(err)
				}
				sum := 0.0
				for i := range v {
					sum += math.Abs(float64(v[i] - counts[i]))
				}
				runs = append(runs, sum/float64(len(v)))
			}
			return median(runs)
		}
		mRep, mAdd, mComp := mae(sRep), mae(sAdd), mae(n)
		table += fmt.Sprintf("| %d | %d | %d | %d | %.1f | %.1f | %.1f |\n", n, depth, sRep, sAdd, mRep, mAdd, mComp)
		if 2*depth < n && !(mRep < mComp) {
			t.Errorf("|Q| = %d: set mechanism MAE %v not below composition %v", n, mRep, mComp)
		}
	}
	t.Log(table)
}

func median(x []float64) float64 {
	y := append([]float64(nil), x...)
	for i := range y {
		for j := i + 1; j < len(y); j++ {
			if y[j] < y[i] {
				y[i], y[j] = y[j], y[i]
			}
		}
	}
	return (y[(len(y)-1)/2] + y[len(y)/2]) / 2
}

// TestDefaultNeighboursAddRemove: the zero Neighbours is AddRemove, the
// neighbours the ledger and synth answer account under (DESIGN.md §3), so
// a caller that does not choose gets S = max depth, not Inan et al.'s
// replace-one bound min(|Q|, 2·depth) (the old default, twice the noise).
// Unknown values fall back to the replace-one bound, valid under both.
func TestDefaultNeighboursAddRemove(t *testing.T) {
	boxes, _, _ := auditPair()
	var nb Neighbours
	if nb != AddRemove {
		t.Fatalf("zero Neighbours = %d, want AddRemove (%d)", nb, AddRemove)
	}
	cases := []struct {
		nb   Neighbours
		want int
	}{{nb, 4}, {AddRemove, 4}, {Replace, min(len(boxes), 8)}, {Neighbours(7), min(len(boxes), 8)}}
	for _, c := range cases {
		if sens, depth := Sensitivity(boxes, c.nb); sens != c.want || depth != 4 {
			t.Errorf("Sensitivity(nb = %d) = %d (depth %d), want %d (depth 4)", c.nb, sens, depth, c.want)
		}
	}
}
