package numerical

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// TestJoinPointsKeysAsText: orders 7, 07 and zz (o_orderkey stored as
// text) and two line items of order 7 (l_orderkey stored as BIGINT). Keys
// compare as the engine compares them (engine.Engine.KeyText), so only
// order '7' joins: the join has 2 tuples, the number the engine's degrees
// (and Δ̃) count. On the raw columns the query fails (DuckDB 1.5 and
// PostgreSQL refuse text = BIGINT), and an engine casting text to a
// number would join '07' too: 4 tuples.
func TestJoinPointsKeysAsText(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"o.csv": "o_orderkey,o_p\n7,0\n07,0\nzz,1\n",
		"l.csv": "l_orderkey,l_q\n7,3\n7,4\n",
		"synth.yaml": `privacy: {epsilon: 1, delta: 1e-7}
tables:
  - name: o
    source: o.csv
    columns: {o_orderkey: {type: key}, o_p: {type: integer, min: 0, max: 1}}
  - name: l
    source: l.csv
    columns: {l_orderkey: {type: key}, l_q: {type: integer, min: 0, max: 7}}
join: [l.l_orderkey = o.o_orderkey]
release: {columns: [o_p]}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := spec.Load(filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := engine.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	u, err := NewUniverse(Grid{Names: []string{"o_p"}, Sizes: []int{2}}, Measure{Name: "l_q", Min: 0, Max: 7}, UniverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js := JoinSpec{Join: TwoTableJoin{Left: ColumnRef{"o", "o_orderkey"}, Right: ColumnRef{"l", "l_orderkey"}},
		Conditions: []ColumnRef{{"o", "o_p"}}, Measure: []ColumnRef{{"l", "l_q"}}}
	pts, err := JoinPoints(ctx, e, js, u)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, p := range pts {
		n += p.Count
	}
	sums, err := JoinExactSums(ctx, e, js, u)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || sums[0] != 7 || sums[1] != 0 {
		t.Errorf("join of %d tuples, sums %v; want 2 tuples (order '7' only), sums [7 0]", n, sums)
	}
}
