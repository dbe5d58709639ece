package multi

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// TestContributionsKeysAsText: customers '7' and '07' (stored as text)
// and two orders of customer 7 (o_custkey stored as BIGINT). Keys compare
// as text, as the engine's statistics do, so only customer '7' owns the
// orders: one unit's deletion changes one unit's vector. On raw columns
// DuckDB cast '07' to 7 and both customers owned both orders.
func TestContributionsKeysAsText(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"customer.csv": "c_custkey,c_seg\n7,A\n07,A\n",
		"orders.csv":   "o_orderkey,o_custkey\n1,7\n2,7\n",
		"synth.yaml": `privacy: {epsilon: 1, delta: 1e-7, unit: customer}
tables:
  - name: customer
    source: customer.csv
    primary_key: c_custkey
    columns: {c_custkey: {type: key}, c_seg: {type: categorical, values: [A, B]}}
  - name: orders
    source: orders.csv
    primary_key: o_orderkey
    columns: {o_orderkey: {type: key}, o_custkey: {type: key}}
join: [orders.o_custkey = customer.c_custkey]
release: {columns: [c_seg]}
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
	q, err := relational.Parse(ctx, e, s, "SELECT c_seg, COUNT(*) FROM orders, customer WHERE o_custkey = c_custkey GROUP BY c_seg")
	if err != nil {
		t.Fatal(err)
	}
	entries, units, err := Contributions(ctx, e, s, []*relational.Query{q}, "customer", 1)
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, en := range entries {
		total += en.Psi
	}
	if len(entries) != 1 || total != 2 {
		t.Errorf("entries %+v over %d units: want one unit owning both orders (ψ = 2)", entries, units)
	}
}
