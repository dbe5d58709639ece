package uniformize

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/internal/audit"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/spec"
)

// The partition audits run the partition step of TwoTable — noisy degrees,
// buckets, and the set of buckets that run, which decides the PMW runs and
// is what the report publishes — on neighbouring pairs whose degrees the
// real engine (DuckDB) computes once, and require the honest partition to
// stay below its claim (ε/2, δ/2) of Lemma 4.1 and each planted bug to be
// caught (an ε lower bound above the claim): an audit counts only if it
// can fail (DESIGN.md §6). The sub-instances' join-as-one runs are audited
// in joinasone and pmw.

// memoData serves the degrees the engine computed once; the partition
// step reads nothing else.
type memoData struct{ degs []int64 }

func (m memoData) Degrees(context.Context, *hypergraph.Hypergraph, []string) ([]int64, error) {
	return m.degs, nil
}
func (m memoData) Assign(context.Context, []int32) error { return nil }
func (m memoData) Bucket(context.Context, int) (*hypergraph.Hypergraph, joinasone.Stats, error) {
	return nil, nil, fmt.Errorf("not used")
}
func (m memoData) Close(context.Context) error { return nil }

// engineDegrees loads r1(b) and r2(b) given as lists of join values into a
// fresh DuckDB engine and returns the degrees TwoTableEngine computes.
func engineDegrees(t *testing.T, r1, r2 []string) []int64 {
	t.Helper()
	dir := t.TempDir()
	for i, rows := range [][]string{r1, r2} {
		body := "id,b\n"
		for k, b := range rows {
			body += fmt.Sprintf("%d,%s\n", k, b)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%d.csv", i+1)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var y strings.Builder
	y.WriteString("privacy: {epsilon: 1, delta: 1e-6}\ntables:\n")
	for i := 1; i <= 2; i++ {
		fmt.Fprintf(&y, "  - name: r%d\n    source: r%d.csv\n    columns:\n      id: {type: key}\n      b: {type: key}\n", i, i)
		if i == 1 {
			y.WriteString("      x: {type: categorical, values: [u, v]}\n")
		}
	}
	y.WriteString("join: [r1.b = r2.b]\nrelease:\n  columns: [r1.x]\noutput: {path: out}\n")
	// r1 needs its released column x.
	body := "id,b,x\n"
	for k, b := range r1 {
		body += fmt.Sprintf("%d,%s,u\n", k, b)
	}
	if err := os.WriteFile(filepath.Join(dir, "r1.csv"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "synth.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := specLoad(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := engine.Open(ctx, "duckdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if err := eng.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	d := TwoTableEngine(eng)
	degs, err := d.Degrees(ctx, h, h.Boundary(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return degs
}

func repeat(n int, v string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// partitionMech is the partition step as a mechanism: the bit mask of the
// buckets that run. The plan is prepared once and shared by every run:
// PrepareTwoTable reads no data and draws no noise (λ, τ′, R₀, the bucket
// thresholds and the sampler depend on the public configuration only), and
// partition only reads the plan, so one plan per input gives every run the
// same distribution as a fresh plan per run, at a tenth of the cost
// (PrepareTwoTable was 90% of a run's CPU).
func partitionMech(t *testing.T, degs []int64, eps, delta float64, mut ttMutation) audit.Mechanism[float64] {
	t.Helper()
	h := ttHypergraph(t, false)
	cfg := ttConfig(t, eps, delta)
	cfg.mut = mut
	l, err := dp.NewLedger(dp.Budget{Epsilon: eps, Delta: delta})
	if err != nil {
		t.Fatal(err)
	}
	p, err := PrepareTwoTable(h, cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	return func(src dp.Source) float64 {
		_, run, err := p.partition(context.Background(), src, memoData{degs})
		if err != nil {
			panic(err)
		}
		var mask float64
		for _, i := range run {
			mask += float64(int64(1) << i)
		}
		return mask
	}
}

func partitionRuns() int {
	if testing.Short() {
		return 20_000
	}
	return 100_000
}

// TestAuditPartition: the honest partition at its claim (ε/2, δ/2) on a
// pair where one tuple moves a join value across the bucket boundary
// ⌊4λ⌋ above R₀ and on a pair where one tuple makes a join value present;
// "bucket by the true degree" caught on the first, "skip empty buckets" on
// the second. Bounds hold with confidence 1 − 1e-6 each.
func TestAuditPartition(t *testing.T) {
	t.Parallel()
	const eps, delta = 2.0, 1e-3
	claimEps, claimDelta := eps/2, delta/2
	p, err := PrepareTwoTable(ttHypergraph(t, false), ttConfig(t, eps, delta), mustLedger(t, eps, delta))
	if err != nil {
		t.Fatal(err)
	}
	// The boundary above R₀: degree thr[top] is in bucket top, thr[top]+1
	// in top+1, where top is the largest bucket of R₀.
	top := p.always[len(p.always)-1]
	edge := int(p.thr[top])
	t.Logf("λ = %.3f, τ′ = %d, R₀ = %v, boundary degree %d | %d", p.lambda, p.pad.Tau(), p.always, edge, edge+1)
	// Boundary pair: r1 holds b1 edge+1 times on D and edge times on D′.
	crossD := engineDegrees(t, repeat(edge+1, "b1"), []string{"b1"})
	crossP := engineDegrees(t, repeat(edge, "b1"), []string{"b1"})
	// Presence pair: r2 holds a heavy b2 on both; r1 holds b1 once on D
	// and is empty on D′ (r1 keeps one tuple of b2 so that its file has a
	// row).
	// Straddle pair: the boundary ⌊2^(top+1)·λ⌋ sits at the centre of the
	// noise, where the bucket of the noisy degree is most sensitive.
	mid := int(p.thr[top+1]) - int(p.pad.Tau())
	midD := engineDegrees(t, repeat(mid+1, "b1"), []string{"b1"})
	midP := engineDegrees(t, repeat(mid, "b1"), []string{"b1"})
	heavy := repeat(edge, "b2")
	presD := engineDegrees(t, []string{"b1", "b2"}, heavy)
	presP := engineDegrees(t, []string{"b2"}, heavy)
	if len(presD) != 2 || len(presP) != 1 {
		t.Fatalf("presence pair degrees %v / %v", presD, presP)
	}
	cases := []struct {
		name  string
		d, dP []int64
		mut   ttMutation
		catch bool
	}{
		{"honest, value crosses a bucket boundary", crossD, crossP, ttHonest, false},
		{"bucket by the true degree", crossD, crossP, ttTrueDegree, true},
		{"honest, noisy degree straddles a bucket boundary", midD, midP, ttHonest, false},
		{"honest, value present or absent", presD, presP, ttHonest, false},
		{"skip empty buckets", presD, presP, ttSkipEmpty, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := audit.RunScalar(context.Background(), partitionMech(t, c.d, eps, delta, c.mut), partitionMech(t, c.dP, eps, delta, c.mut),
				audit.Options{N: partitionRuns(), Delta: claimDelta, Confidence: 1 - 1e-6})
			if !c.catch && errors.Is(err, audit.ErrVacuous) {
				// The honest partition ran the same buckets in every run on
				// both inputs: no evidence either way, and the mutant on the
				// same pair is what shows the pair has power.
				t.Logf("%s: the same bucket set in every run on both inputs (%v)", c.name, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: ε lower bound %.3f (claim %.3g), event %s, counts %d / %d of %d",
				c.name, res.EpsilonLowerBound, claimEps, res.Event, res.CountD, res.CountDPrime, res.N)
			if c.catch && !(res.EpsilonLowerBound > claimEps) {
				t.Fatalf("planted bug not caught: ε lower bound %v ≤ claimed %v", res.EpsilonLowerBound, claimEps)
			}
			if !c.catch && res.EpsilonLowerBound > claimEps {
				t.Fatalf("ε lower bound %v > claimed %v (event %s)", res.EpsilonLowerBound, claimEps, res.Event)
			}
		})
	}
}

func specLoad(path string) (*spec.Spec, error) { return spec.Load(path) }
