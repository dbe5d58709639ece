package uniformize

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
)

// The whole-mechanism audits run TwoTable end to end — noisy degrees,
// buckets, every bucket's sensitivity bound, n̂ and PMW, the rows written —
// on tiny neighbouring two-table instances (brute-force statistics,
// ttFake), and require the honest mechanism to stay below its claim (ε, δ)
// and each planted bug to be caught. The partition audits in
// twotable_audit_test.go test the first half alone with more power; these
// show the halves compose as Lemma 4.1 says, and catch bugs that live in a
// bucket's run (a sensitivity bound below the bucket's degrees).

// mechOutput encodes a run as one scalar: the bit mask of the buckets that
// ran in the high digits and the synthetic count of cell (x=0, y=0) — the
// cell the probe tuple's join rows fall in — in the low ones, so that
// threshold events of the audit separate both.
func mechOutput(src dp.Source, res *TwoTableResult) float64 {
	var mask int64
	for _, p := range res.Partitions {
		mask |= int64(1) << p.Bucket
	}
	var c00 int64
	if err := res.Counts(src, func(cell, n int64) error {
		if cell == 0 {
			c00 = n
		}
		return nil
	}); err != nil {
		panic(err)
	}
	if c00 < 0 || c00 >= 1_000_000 {
		panic(fmt.Sprintf("count %d outside the encoding", c00))
	}
	return float64(mask)*1_000_000 + float64(c00)
}

// wholeMech is TwoTable on a fixed instance as an audit mechanism.
func wholeMech(t testing.TB, in ttInstance, eps, delta float64, public bool, mut ttMutation) audit.Mechanism[float64] {
	cfg := ttConfig(t, eps, delta)
	cfg.publicBound, cfg.mut = public, mut
	cfg.Rounds = 1
	h := ttHypergraph(t, false)
	fake := ttPrepared(in)
	return func(src dp.Source) float64 {
		l, err := dp.NewLedger(dp.Budget{Epsilon: eps, Delta: delta})
		if err != nil {
			panic(err)
		}
		res, err := TwoTable(context.Background(), src, h, fake(), cfg, l)
		if err != nil {
			panic(err)
		}
		return mechOutput(src, res)
	}
}

// ttHeavy is an instance whose value "h" has degree d in r2 and, when
// withProbe, one tuple in r1: the neighbours differ by that tuple, which
// adds d join rows, all in cell (x=0, y=0).
func ttHeavy(d int, withProbe bool) ttInstance {
	var in ttInstance
	id := 0
	for range d {
		in[1] = append(in[1], ttTuple{id: id, b: "h"})
		id++
	}
	// A light value keeps both relations non-empty on both neighbours.
	in[0] = append(in[0], ttTuple{id: id, b: "l", v: 1})
	in[1] = append(in[1], ttTuple{id: id + 1, b: "l", v: 1})
	if withProbe {
		in[0] = append(in[0], ttTuple{id: id + 2, b: "h"})
	}
	return in
}

func wholeRuns() int {
	if testing.Short() {
		return 5_000
	}
	return 20_000
}

// TestAuditTwoTableWhole audits the whole uniformized mechanism, with
// Alg. 1 in every bucket and with the public bucket bound, at its claim
// (ε, δ) on two pairs: the probe tuple adds d join rows where d sits just
// inside a bucket's bound, and one tuple moves a join value's degree
// across a bucket boundary. Planted bugs: "bucket by the true degree" and
// "public bound forgotten (sensitivity 1)" (a sensitivity smaller than the
// degrees the bucket may hold). Confidence 1 − 1e-6 per bound.
func TestAuditTwoTableWhole(t *testing.T) {
	t.Parallel()
	const eps, delta = 2.0, 1e-3
	p, err := PrepareTwoTable(ttHypergraph(t, false), ttConfig(t, eps, delta), mustLedger(t, eps, delta))
	if err != nil {
		t.Fatal(err)
	}
	top := p.always[len(p.always)-1]
	// d = thr[hb] − 2τ′ for the bucket hb = top+3: the heavy value's
	// noisy degree lies in (thr[hb−1], thr[hb]], so it always sits in
	// bucket hb, and the probe adds d ≫ 1 join rows.
	hb := top + 3
	d := int(p.thr[hb] - 2*p.pad.Tau())
	if int64(d) <= p.thr[hb-1] {
		t.Fatalf("d = %d not above thr[%d] = %d: pick other parameters", d, hb-1, p.thr[hb-1])
	}
	edge := int(p.thr[top])
	cross := func(n int) ttInstance {
		var in ttInstance
		for k := range n {
			in[0] = append(in[0], ttTuple{id: k, b: "c"})
		}
		in[1] = append(in[1], ttTuple{id: n, b: "c", v: 1})
		return in
	}
	t.Logf("λ = %.3f, τ′ = %d, R₀ = %v, heavy degree %d, boundary degree %d | %d", p.lambda, p.pad.Tau(), p.always, d, edge, edge+1)
	cases := []struct {
		name   string
		d, dP  ttInstance
		public bool
		mut    ttMutation
		catch  bool
	}{
		{"Alg. 1 per bucket, probe adds d rows", ttHeavy(d, true), ttHeavy(d, false), false, ttHonest, false},
		{"public bound, probe adds d rows", ttHeavy(d, true), ttHeavy(d, false), true, ttHonest, false},
		{"public bound forgotten (sensitivity 1)", ttHeavy(d, true), ttHeavy(d, false), true, ttLowBound, true},
		{"public bound, degree crosses a boundary", cross(edge + 1), cross(edge), true, ttHonest, false},
		{"bucket by the true degree", cross(edge + 1), cross(edge), true, ttTrueDegree, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			runs := wholeRuns()
			if os.Getenv("SYNTH_SLOW_AUDITS") == "" {
				// The default run makes 5,000 runs per input (a pass is
				// about 8 s of CPU instead of 30: the runs are PMW's, all
				// outside this package); SYNTH_SLOW_AUDITS (.ci/run) runs
				// wholeRuns(). The assertions and their confidence
				// (1 − 1e-6, Bonferroni over the thresholds) are the same.
				// Mutants: both put ≥ 98% of D′'s runs and none of D's in
				// one event at 20,000 runs (bounds 6.98 and 6.94, claim
				// 2); at 5,000 runs they give 5.59 and 5.55 (measured),
				// and with D's count at 0 the bound stays above 2 until
				// D′'s falls below about 3% of the runs (mean 98%).
				// Honest pairs: with the same event family and level, an
				// event of probability 0.5 on one input makes the bound
				// exceed the claim 2 once the true ratio is above e^2.46
				// at 5,000 runs (e^2.21 at 20,000; 0.9: e^2.28 against
				// e^2.14), computed from the Clopper–Pearson bounds the
				// audit uses: a leak that large still fails the default
				// run, one between those bounds only the full one.
				runs = min(runs, 5_000)
			}
			res := audit.MustRunScalar(t, wholeMech(t, c.d, eps, delta, c.public, c.mut), wholeMech(t, c.dP, eps, delta, c.public, c.mut),
				runs, delta)
			t.Logf("%s: ε lower bound %.3f (claim %.3g), event %s, counts %d / %d of %d, %v",
				c.name, res.EpsilonLowerBound, eps, res.Event, res.CountD, res.CountDPrime, res.N, time.Since(start).Round(time.Millisecond))
			if c.catch && !(res.EpsilonLowerBound > eps) {
				t.Fatalf("planted bug not caught: ε lower bound %v ≤ claimed %v", res.EpsilonLowerBound, eps)
			}
			if !c.catch && res.EpsilonLowerBound > eps {
				t.Fatalf("ε lower bound %v > claimed %v (event %s)", res.EpsilonLowerBound, eps, res.Event)
			}
		})
	}
}

// BenchmarkWholeMech is one run of the audited mechanism on the tiny
// heavy instance (the audit's unit of work).
func BenchmarkWholeMech(b *testing.B) {
	m := wholeMech(b, ttHeavy(100, true), 2, 1e-3, true, ttHonest)
	src := dp.NewSeededSource(1)
	for b.Loop() {
		m(src)
	}
}
