package residual_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/residual/internal/brute"
	"github.com/synth-dp/synth/spec"
)

// The engine satisfies the package's interface.
var _ residual.BoundaryCounter = (*engine.Engine)(nil)

// writeCSV writes rows under a header to dir/name and returns the path.
func writeCSV(t testing.TB, dir, name string, header []string, rows [][]string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	if err := w.Write(header); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// instanceSpec writes the instance's relations as CSV files (one key column
// per attribute, named by the lower-cased attribute) and returns a spec
// joining every pair of relations on their shared attributes.
func instanceSpec(t testing.TB, in *brute.Instance) *spec.Spec {
	t.Helper()
	dir := t.TempDir()
	s := &spec.Spec{}
	owner := map[string]string{} // attribute -> first relation holding it
	for _, r := range in.Rels {
		header := make([]string, len(r.Attrs))
		cols := make([]spec.Column, len(r.Attrs))
		for j, a := range r.Attrs {
			header[j] = strings.ToLower(a)
			cols[j] = spec.Column{Name: header[j], Type: spec.Key}
		}
		rows := make([][]string, len(r.Tuples))
		for i, tu := range r.Tuples {
			rows[i] = make([]string, len(tu))
			for j, v := range tu {
				rows[i][j] = fmt.Sprint(v)
			}
		}
		src := writeCSV(t, dir, r.Name+".csv", header, rows)
		s.Tables = append(s.Tables, spec.Table{Name: r.Name, Source: src, Format: "csv", Public: r.Public, Columns: cols})
		for _, a := range r.Attrs {
			col := strings.ToLower(a)
			if first, ok := owner[a]; ok {
				s.Join = append(s.Join, spec.JoinEq{
					Left:  spec.ColumnRef{Table: first, Column: col},
					Right: spec.ColumnRef{Table: r.Name, Column: col},
				})
			} else {
				owner[a] = r.Name
			}
		}
	}
	return s
}

// TestEngineMatchesBruteForce loads random small instances into the engine
// and checks its T_E (and the join size) against the nested-loop counter,
// then the whole residual sensitivity. One engine loads the instances in
// turn (each Load replaces the tables of the same names), and the T_E of
// the proper subsets are those the engine returned inside Compute, each
// compared with the counter's: one query per connected subset, not two.
func TestEngineMatchesBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 60 instances into DuckDB")
	}
	t.Parallel()
	ctx := context.Background()
	rng := newRand(t)
	e, err := engine.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	name := func(h *hypergraph.Hypergraph, set hypergraph.Set) string {
		names := h.Names(set)
		sort.Strings(names)
		return strings.Join(names, ",")
	}
	for n := range 60 {
		in := brute.Random(rng, brute.Shapes[n%len(brute.Shapes)], 6, 0.2)
		s := instanceSpec(t, in)
		if err := e.Load(ctx, s); err != nil {
			t.Fatalf("%s: load: %v", in, err)
		}
		h, err := s.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		hb, err := in.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		beta := betas[n%len(betas)]
		got, err := residual.Compute(ctx, h, e, beta)
		if err != nil {
			t.Fatalf("%s: Compute through the engine: %v", in, err)
		}
		c := &brute.Counter{In: in}
		for set := hypergraph.Set(1); set <= h.All(); set++ {
			if !h.Connected(set) {
				continue
			}
			var engineT int64
			if set == h.All() {
				// The join size, which T_E does not hold.
				if engineT, err = e.MaxBoundaryCount(ctx, h, set); err != nil {
					t.Fatalf("%s: engine T_%v: %v", in, h.Names(set), err)
				}
			} else {
				v, ok := got.TE[name(h, set)]
				if !ok {
					t.Fatalf("%s: Compute's T_E has no %v", in, h.Names(set))
				}
				engineT = int64(v)
				if float64(engineT) != v {
					t.Fatalf("%s: engine T_%v = %v, not a count", in, h.Names(set), v)
				}
			}
			want, err := c.MaxBoundaryCount(ctx, hb, set)
			if err != nil {
				t.Fatal(err)
			}
			if engineT != want {
				t.Fatalf("%s: engine T_%v = %d, brute force %d", in, h.Names(set), engineT, want)
			}
		}
		want, err := residual.Compute(ctx, hb, &brute.Counter{In: in}, beta)
		if err != nil {
			t.Fatal(err)
		}
		if got.RS != want.RS || got.ArgmaxK != want.ArgmaxK || fmt.Sprint(got.TE) != fmt.Sprint(want.TE) {
			t.Fatalf("%s: engine %+v, brute force %+v", in, got, want)
		}
	}
}

// tpchDir holds the TPC-H scale factor 0.01 tables.
const tpchDir = "/work/shared/data/tpch/sf0.01"

// tpchSpec is customer ⋈ orders ⋈ lineitem on c_custkey = o_custkey and
// o_orderkey = l_orderkey, plus nation on c_nationkey = n_nationkey when
// withNation is set; only key columns are declared.
func tpchSpec(t testing.TB, withNation, nationPublic bool) *spec.Spec {
	t.Helper()
	src := func(name string) string {
		p := filepath.Join(tpchDir, name+".csv")
		if _, err := os.Stat(p); err != nil {
			t.Skipf("TPC-H data missing: %v", err)
		}
		return p
	}
	key := func(names ...string) []spec.Column {
		out := make([]spec.Column, len(names))
		for i, n := range names {
			out[i] = spec.Column{Name: n, Type: spec.Key}
		}
		return out
	}
	ref := func(t, c string) spec.ColumnRef { return spec.ColumnRef{Table: t, Column: c} }
	s := &spec.Spec{
		Tables: []spec.Table{
			{Name: "customer", Source: src("customer"), Format: "csv", Columns: key("c_custkey")},
			{Name: "orders", Source: src("orders"), Format: "csv", Columns: key("o_orderkey", "o_custkey")},
			{Name: "lineitem", Source: src("lineitem"), Format: "csv", Columns: key("l_orderkey")},
		},
		Join: []spec.JoinEq{
			{Left: ref("customer", "c_custkey"), Right: ref("orders", "o_custkey")},
			{Left: ref("orders", "o_orderkey"), Right: ref("lineitem", "l_orderkey")},
		},
	}
	if withNation {
		s.Tables[0].Columns = key("c_custkey", "c_nationkey")
		s.Tables = append(s.Tables, spec.Table{Name: "nation", Source: src("nation"), Format: "csv", Public: nationPublic, Columns: key("n_nationkey")})
		s.Join = append(s.Join, spec.JoinEq{Left: ref("customer", "c_nationkey"), Right: ref("nation", "n_nationkey")})
	}
	return s
}

// loadTPCH opens an engine with the spec's tables loaded.
func loadTPCH(t testing.TB, s *spec.Spec) (*engine.Engine, *hypergraph.Hypergraph) {
	t.Helper()
	ctx := context.Background()
	e, err := engine.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	return e, h
}

// TestTPCH checks T_E and RS^β on TPC-H SF 0.01 customer ⋈ orders ⋈
// lineitem against values computed independently (a Python script over the
// CSV files): every customer key and order key is unique, an order has at
// most 7 line items, and a customer has at most 139 line items over its
// orders. With β = 1/ln(10⁶), LŜ^k = 139 + 7a + b + ab (a + b = k, i =
// customer), and e^{−βk}·LŜ^k peaks at k = 0: RS = 139.
func TestTPCH(t *testing.T) {
	t.Parallel()
	// One engine holds the four tables for the three joins: the engine's
	// tables do not depend on which relations a join uses or marks public
	// (that is the hypergraph's, built from each spec).
	e, _ := loadTPCH(t, tpchSpec(t, true, false))
	s := tpchSpec(t, false, false)
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	got, err := residual.Compute(context.Background(), h, e, 1/math.Log(1e6))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("customer ⋈ orders ⋈ lineitem: %+v", got)
	want := map[string]float64{"customer": 1, "orders": 1, "lineitem": 7, "customer,orders": 1, "lineitem,orders": 139, "customer,lineitem": 7}
	if fmt.Sprint(got.TE) != fmt.Sprint(want) || got.RS != 139 || got.ArgmaxK != 0 || got.LocalSensitivity != 139 {
		t.Fatalf("got %+v, want T_E %v, RS = LŜ^0 = 139 at k = 0", got, want)
	}
	// With nation on c_nationkey = n_nationkey, a nation has at most 3089
	// line items (Python check again): T_{customer,lineitem,orders} = 3089
	// is LŜ^0 and RS when nation is private (i = nation); when nation is
	// public, i ranges over the other three and RS stays 139.
	for _, public := range []bool{false, true} {
		h, err := tpchSpec(t, true, public).Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		got, err := residual.Compute(context.Background(), h, e, 1/math.Log(1e6))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("with nation (public %v): %+v", public, got)
		want := 3089.0
		if public {
			want = 139
		}
		if got.TE["customer,lineitem,orders"] != 3089 || got.TE["lineitem,nation,orders"] != 139 || got.RS != want || got.ArgmaxK != 0 {
			t.Fatalf("with nation (public %v): got %+v, want T_{customer,lineitem,orders} = 3089, RS = %v at k = 0", public, got, want)
		}
	}
}

// BenchmarkTETPCH computes every T_E through the engine on TPC-H SF 0.01:
// customer ⋈ orders ⋈ lineitem (3 relations, 5 connected proper subsets)
// and the same with nation (4 relations).
func BenchmarkTETPCH(b *testing.B) {
	for _, withNation := range []bool{false, true} {
		name := "customer-orders-lineitem"
		if withNation {
			name = "nation-customer-orders-lineitem"
		}
		b.Run(name, func(b *testing.B) {
			s := tpchSpec(b, withNation, false)
			e, h := loadTPCH(b, s)
			ctx := context.Background()
			for b.Loop() {
				if _, err := residual.TE(ctx, h, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
