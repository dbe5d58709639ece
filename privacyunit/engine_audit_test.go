package privacyunit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// memoStats serves a Stats's answers once per distinct question: the
// engine's aggregates are deterministic functions of the loaded data, so
// reading each once and replaying it leaves the mechanism's distribution
// as it is, while the audit's thousands of runs cost one query each.
// Safe for concurrent use (the audit's workers share it).
type memoStats struct {
	inner Stats
	mu    sync.Mutex
	memo  map[string]any
}

func (m *memoStats) get(key string, f func() (any, error)) (any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.memo[key]; ok {
		return v, nil
	}
	v, err := f()
	if err != nil {
		return nil, err
	}
	m.memo[key] = v
	return v, nil
}

type unitHist struct {
	cells []engine.Cell
	degs  []engine.UnitDegree
}

func (m *memoStats) CheckPrimaryKey(ctx context.Context, h *hypergraph.Hypergraph, table string, key []string) error {
	_, err := m.get(fmt.Sprint("key", table, key), func() (any, error) { return nil, m.inner.CheckPrimaryKey(ctx, h, table, key) })
	return err
}

func (m *memoStats) UnitHistogram(ctx context.Context, h *hypergraph.Hypergraph, key engine.UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]engine.Cell, []engine.UnitDegree, error) {
	v, err := m.get(fmt.Sprint("hist", key, cols, sizes, grid, bound), func() (any, error) {
		c, d, err := m.inner.UnitHistogram(ctx, h, key, cols, sizes, grid, bound)
		return unitHist{c, d}, err
	})
	if err != nil {
		return nil, nil, err
	}
	u := v.(unitHist)
	return append([]engine.Cell(nil), u.cells...), u.degs, nil
}

func (m *memoStats) UnitMarginalL2(ctx context.Context, h *hypergraph.Hypergraph, key engine.UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]engine.Cell, error) {
	v, err := m.get(fmt.Sprint("l2", key, cols, sizes, grid, bound), func() (any, error) {
		return m.inner.UnitMarginalL2(ctx, h, key, cols, sizes, grid, bound)
	})
	if err != nil {
		return nil, err
	}
	return append([]engine.Cell(nil), v.([]engine.Cell)...), nil
}

// engineStats loads the audit spec's two tables into an embedded DuckDB
// engine: auditLight units of one row in c1 and, withX, unit X with
// auditHeavy rows in c0 (the heavy pair, as CSV files); D′ deletes X's
// tuple and every row referencing it.
func engineStats(t *testing.T, withX bool) (*spec.Spec, *hypergraph.Folding, Stats) {
	t.Helper()
	s, f := auditSpec(t)
	dir := filepath.Dir(s.Table("u").Source) // the spec resolves sources against its folder, a fresh TempDir
	var u, o strings.Builder
	u.WriteString("u_id\n")
	o.WriteString("o_id,o_ref,o_cat\n")
	oid := 0
	for i := range auditLight {
		fmt.Fprintf(&u, "%d\n", i)
		fmt.Fprintf(&o, "%d,%d,c1\n", oid, i)
		oid++
	}
	if withX {
		fmt.Fprintf(&u, "%d\n", auditLight)
		for range auditHeavy {
			fmt.Fprintf(&o, "%d,%d,c0\n", oid, auditLight)
			oid++
		}
	}
	for name, body := range map[string]string{"u.csv": u.String(), "o.csv": o.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
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
	return s, f, &memoStats{inner: eng, memo: map[string]any{}}
}

// TestAuditPrivacyUnitEngine audits the release with its statistics read
// through the embedded DuckDB engine (the SQL of engine.UnitHistogram and
// engine.UnitMarginalL2) on a tiny instance, the heavy pair as CSV files:
// the release on the factored model with release.contribution_norm l2,
// whose 1-way marginals and selections read the L1-bounded histogram and
// whose rounds read the L2-clipped marginal. Each engine answers each
// question once (memoStats: the queries are deterministic). An engine
// that ignored n_u (every row weighing one row) would put X's 1,000 rows
// in c0 of the 1-way marginal; one that clipped by ‖v‖₁ for ‖v‖₂² would
// weigh X's vector r/√1000 per row, 32 times r in all: both move the
// model's share of c0 far beyond the claim (each planted in the SQL and
// seen failing this test; 3,000 runs a side, as the mutants of the memory
// pairs). The planted bug of the mutation table (no bounding) shows the
// audit sees the engine's weights.
func TestAuditPrivacyUnitEngine(t *testing.T) {
	s, f, withX := engineStats(t, true)
	_, _, without := engineStats(t, false)
	u := []string{"o_cat"}
	for _, tc := range []struct {
		name string
		mut  mutation
	}{
		{"honest", mutNone},
		{"no bounding", mutNoBounding},
	} {
		cfg := Config{Epsilon: auditEps, Delta: auditDelta, Columns: spec.FoldColumns(f, s.Release.Columns),
			Families: auditFamilies(), Bound: auditBound, Rounds: 2, Factored: true, Names: u, Sizes: []int{2}, L2: true, mutation: tc.mut}
		res := runMechAudit(t, unitMech(s, f, cfg, withX), unitMech(s, f, cfg, without), issue39Runs(tc.mut))
		checkUnitAudit(t, tc.name, res, tc.mut != mutNone)
	}
}
