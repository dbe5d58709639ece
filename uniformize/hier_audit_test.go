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
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
)

// The hierarchical partition audits run the partition step of Hier — the
// noisy degrees of Alg. 7, the buckets, and the set of sub-instances that
// run, which decides the PMW runs and is what the report publishes — on
// neighbouring instances of members(store, member) ⋈ purchases(store,
// member) ⋈ staff(store), whose degrees the real engine (DuckDB, through
// HierEngine) computes once. The honest partition must stay below its
// claim (ε/2, δ/2); each planted bug must be caught (an ε lower bound
// above the claim). The sub-instances' join-as-one runs are audited in
// joinasone and pmw.

// hierAuditInstance is the neighbours' data: for every store, its number
// of members (each with one purchase); every store has one staff row.
type hierAuditInstance map[string]int

// hierAuditConfig is the release configuration of the audits: one
// released column per table.
func hierAuditConfig(t testing.TB, eps, delta float64) HierConfig {
	t.Helper()
	u, err := pmw.NewUniverse([]string{"x", "y"}, []int{2, 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return HierConfig{Config: joinasone.Config{
		Epsilon: eps, Delta: delta,
		Columns:  []spec.ColumnRef{{Table: "members", Column: "x"}, {Table: "purchases", Column: "y"}},
		Universe: u,
		Families: []pmw.Family{pmw.Marginal([]int{0}), pmw.Marginal([]int{1}), pmw.Marginal([]int{0, 1})},
	}}
}

// loadHierAudit loads the instance into DuckDB and returns the hypergraph
// of the spec and the engine.
func loadHierAudit(t *testing.T, in hierAuditInstance) (*hypergraph.Hypergraph, *engine.Engine) {
	t.Helper()
	stores := map[string][2]int{}
	for store, n := range in {
		stores[store] = [2]int{n, n}
	}
	return loadHierStores(t, stores)
}

// loadHierStores is loadHierAudit for stores with n[0] members of which
// the first n[1] have one purchase each.
func loadHierStores(t *testing.T, in map[string][2]int) (*hypergraph.Hypergraph, *engine.Engine) {
	t.Helper()
	dir := t.TempDir()
	var m, p, s strings.Builder
	m.WriteString("member,store,x\n")
	p.WriteString("id,store,member,y\n")
	s.WriteString("id,store\n")
	id := 0
	for store, n := range in {
		for k := range n[0] {
			fmt.Fprintf(&m, "%s-%d,%s,u\n", store, k, store)
			if k < n[1] {
				fmt.Fprintf(&p, "%d,%s,%s-%d,v\n", id, store, store, k)
				id++
			}
		}
		fmt.Fprintf(&s, "%d,%s\n", id, store)
		id++
	}
	for name, body := range map[string]string{"members": m.String(), "purchases": p.String(), "staff": s.String()} {
		if err := os.WriteFile(filepath.Join(dir, name+".csv"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	y := `privacy: {epsilon: 1, delta: 1e-6}
tables:
  - name: members
    source: members.csv
    columns:
      member: {type: key}
      store: {type: key}
      x: {type: categorical, values: [u, w]}
  - name: purchases
    source: purchases.csv
    columns:
      id: {type: key}
      store: {type: key}
      member: {type: key}
      y: {type: categorical, values: [v, w]}
  - name: staff
    source: staff.csv
    columns:
      id: {type: key}
      store: {type: key}
join: [purchases.store = members.store, purchases.member = members.member, staff.store = members.store]
release:
  columns: [members.x, purchases.y]
output: {path: out}
`
	path := filepath.Join(dir, "synth.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := engine.Open(ctx, "duckdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if err := eng.Load(ctx, sp); err != nil {
		t.Fatal(err)
	}
	h, err := sp.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	return h, eng
}

// memoHier serves the degrees the engine computed once for the one
// decomposed node of the audits' tree (store → member).
type memoHier struct{ degs map[HierKey]int64 }

func (m memoHier) Degrees(_ context.Context, q HierDegreeQuery) (map[HierKey]int64, error) {
	if q.Split != 0 || len(q.Conds) != 0 {
		return nil, fmt.Errorf("unexpected query %+v", q)
	}
	return m.degs, nil
}

// hierAuditDegrees returns the plan for budget (eps, delta) and the
// degrees of the instance, computed by HierEngine.
func hierAuditDegrees(t *testing.T, in hierAuditInstance, eps, delta float64) (*HierPlan, memoHier) {
	t.Helper()
	h, eng := loadHierAudit(t, in)
	p, err := PrepareHier(h, hierAuditConfig(t, eps, delta), mustLedger(t, eps, delta))
	if err != nil {
		t.Fatal(err)
	}
	if p.tree.Len() != 2 || len(p.tree.Roots()) != 1 {
		t.Fatalf("tree\n%s", p.tree)
	}
	x := p.tree.BottomUp()[0]
	data := HierEngine(eng, h)
	degs, err := data.Degrees(context.Background(), HierDegreeQuery{E: p.tree.Node(x).Atom, Y: p.tree.Ancestors(x), Z: p.tree.PathAttrs(x)})
	if err != nil {
		t.Fatal(err)
	}
	if err := data.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p, memoHier{degs}
}

// hierPartitionMech is the partition step of p as a mechanism: the bit
// mask of the buckets of the sub-instances that run.
func hierPartitionMech(p *HierPlan, data memoHier, mut hierMutation) audit.Mechanism[float64] {
	params := p.params()
	params.mut = mut
	x := p.tree.BottomUp()[0]
	return func(src dp.Source) float64 {
		res, err := PartitionHierarchical(context.Background(), p.tree, data, params, src)
		if err != nil {
			panic(err)
		}
		var mask float64
		for _, s := range res.Subs {
			mask += float64(int64(1) << s.Config[x])
		}
		return mask
	}
}

// TestHierAuditPartition: the honest hierarchical partition at its claim
// (ε/2, δ/2) on a pair where one members tuple moves a store's degree
// across the bucket boundary 4λ (and one where the noisy degree straddles
// it), and on a pair where one members tuple makes a store present;
// "bucket by the true degree" caught on the first, "skip empty
// sub-instances" on the last. Bounds hold with confidence 1 − 1e-6 each.
func TestHierAuditPartition(t *testing.T) {
	t.Parallel()
	const eps, delta = 2.0, 1e-3
	claimEps, claimDelta := eps/2, delta/2
	probe, _ := hierAuditDegrees(t, hierAuditInstance{"s1": 1}, eps, delta)
	noise, err := dp.NewTruncatedDiscreteLaplace(probe.deg.Eps, probe.deg.Delta, 1)
	if err != nil {
		t.Fatal(err)
	}
	tau := int(noise.Tau())
	lambda := tau // λ = τ′ by default
	if probe.deg.K != 1 || probe.levels != DefaultHierLevels {
		t.Fatalf("K_deg = %d, L = %d", probe.deg.K, probe.levels)
	}
	edge := 4 * lambda // bucket 2 ends at 4λ, bucket 3 starts above
	mid := edge - tau  // noisy degree centred on the boundary
	t.Logf("λ = τ′ = %d, per-degree budget (%g, %g), boundary %d", lambda, probe.deg.Eps, probe.deg.Delta, edge)
	cross := func(n int) hierAuditInstance { return hierAuditInstance{"s1": n} }
	pCrossD, crossD := hierAuditDegrees(t, cross(edge+1), eps, delta)
	_, crossP := hierAuditDegrees(t, cross(edge), eps, delta)
	_, midD := hierAuditDegrees(t, cross(mid+1), eps, delta)
	_, midP := hierAuditDegrees(t, cross(mid), eps, delta)
	// Presence: s2 is heavy (always above bucket 1) on both; s1 has one
	// member on D and none on D′ (its staff row stays: staff is not in
	// the degree's atom).
	_, presD := hierAuditDegrees(t, hierAuditInstance{"s1": 1, "s2": 2*lambda + 1}, eps, delta)
	_, presP := hierAuditDegrees(t, hierAuditInstance{"s1": 0, "s2": 2*lambda + 1}, eps, delta)
	if len(presD.degs) != 2 || len(presP.degs) != 1 {
		t.Fatalf("presence pair degrees %v / %v", presD.degs, presP.degs)
	}
	cases := []struct {
		name  string
		d, dP memoHier
		mut   hierMutation
		catch bool
	}{
		{"honest, store crosses a bucket boundary", crossD, crossP, hierHonest, false},
		{"bucket by the true degree", crossD, crossP, hierTrueDegree, true},
		{"honest, noisy degree straddles a bucket boundary", midD, midP, hierHonest, false},
		{"honest, store present or absent", presD, presP, hierHonest, false},
		{"skip empty sub-instances", presD, presP, hierSkipEmpty, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := audit.RunScalar(context.Background(), hierPartitionMech(pCrossD, c.d, c.mut), hierPartitionMech(pCrossD, c.dP, c.mut),
				audit.Options{N: partitionRuns(), Delta: claimDelta, Confidence: 1 - 1e-6})
			if !c.catch && errors.Is(err, audit.ErrVacuous) {
				// The honest partition put the store in the same bucket in
				// every run on both inputs: no evidence either way; the
				// mutant on the same pair shows the pair has power.
				t.Logf("%s: the same partition in every run on both inputs (%v)", c.name, err)
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
