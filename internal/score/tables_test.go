package score_test

import (
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/internal/tablestest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
)

func loadSpec(t *testing.T, example, file string) *spec.Spec {
	t.Helper()
	s, err := spec.Load(filepath.Join("..", "..", "examples", example, file))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOwnershipTree: the trees of the examples, with nation and region's
// r_name placed in customer (folded) and lineitem's composite key.
func TestOwnershipTree(t *testing.T) {
	for _, c := range []struct {
		example, file string
		tables        []string
		edges         []string
		cols          map[string][]int
	}{
		{"tpch", "nation.yaml", []string{"customer", "orders", "lineitem"},
			[]string{"customer.c_custkey<-orders.o_custkey", "orders.o_orderkey<-lineitem.l_orderkey"},
			map[string][]int{"customer": {0, 1}, "orders": {2}, "lineitem": {3, 4}}},
		{"retail", "synth.yaml", []string{"customers", "invoices", "lines"},
			[]string{"customers.customer_id<-invoices.customer_id", "invoices.invoice_no<-lines.invoice_no"},
			map[string][]int{"customers": {0}, "invoices": {1, 2}, "lines": {3, 4}}},
	} {
		t.Run(c.example+"/"+c.file, func(t *testing.T) {
			tr, err := score.OwnershipTree(loadSpec(t, c.example, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tr.Tables, c.tables) {
				t.Errorf("tables %v, want %v", tr.Tables, c.tables)
			}
			var edges []string
			for _, e := range tr.Edges {
				edges = append(edges, e.Parent+"."+e.PK[0]+"<-"+e.Child+"."+e.FK[0])
			}
			if !slices.Equal(edges, c.edges) {
				t.Errorf("edges %v, want %v", edges, c.edges)
			}
			for tb, want := range c.cols {
				if !slices.Equal(tr.Columns[tb], want) {
					t.Errorf("columns of %s %v, want %v", tb, tr.Columns[tb], want)
				}
			}
		})
	}
	// No unit: no tree.
	s := loadSpec(t, "tpch", "synth.yaml")
	s.Privacy.Unit = ""
	if _, err := score.OwnershipTree(s); !errors.Is(err, score.ErrNoTree) {
		t.Errorf("no unit: err %v, want ErrNoTree", err)
	}
}

// TestEvaluateTablesTPCH and TestEvaluateTablesRetail: a tables folder
// holding the true tables scores 0 on every table marginal, every fan-out
// and every group query; the same folder with one column shuffled across
// its table's rows, or with one edge's children given parents at random,
// scores clearly worse on what the change breaks. Each threshold is a
// quarter or less of the value measured on the perturbed folder (seeded
// perturbations, values in the comments), so the test fails only if the
// evaluator cannot see the change.
func TestEvaluateTablesTPCH(t *testing.T) {
	// TPC-H: the return flag depends on the order date (R and A only
	// before mid-1995): shuffling o_orderdate breaks the tie between an
	// order and its line items (group queries 0.078). Orders per customer
	// are not what random parents give (fan-out TVD 0.57, groups 0.26).
	// Two orders of one customer are no more alike than two random
	// orders (TPC-H draws them independently): no sibling check.
	evaluateTables(t, evalCase{"tpch", "synth.yaml", "orders", 4, 0, 0.02, "orders", 0.1, 0.05, false})
}

func TestEvaluateTablesRetail(t *testing.T) {
	// Retail: quantity and unit price are tied in a line (2-way TVD 0.22
	// once shuffled, groups 0.017); lines per invoice are very skewed
	// (fan-out TVD 0.55, groups 1.10 with random parents).
	// Two lines of one invoice share a quantity bin in 0.306 of pairs,
	// two random lines in 0.150; random parents give 0.150.
	evaluateTables(t, evalCase{"retail", "synth.yaml", "lines", 4, 0.05, 0.004, "lines", 0.1, 0.25, true})
}

type evalCase struct {
	example, file string
	// shuffleTable's released column shuffleCol (a release position) is
	// shuffled; every 2-way marginal of that table with the column must
	// move by at least minPair (0: not checked), the group queries' mean
	// error reach minGroups, and every 1-way marginal stay.
	shuffleTable string
	shuffleCol   int
	minPair      float64
	minGroups    float64
	// reassign's rows get random parents: its fan-out TVD must reach
	// minFanOut, the group queries' mean error minGroupsRnd, and no table
	// marginal may move.
	reassign     string
	minFanOut    float64
	minGroupsRnd float64
	// alike: reassign has a column on which true siblings agree at least
	// minSiblingGap more often than random pairs; with random parents
	// they must agree as random pairs do.
	alike bool
}

func evaluateTables(t *testing.T, c evalCase) {
	ctx := context.Background()
	s := loadSpec(t, c.example, c.file)
	names := layout.ColumnNames(s)
	tr, err := score.OwnershipTree(s)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := score.TrueTables(ctx, s, tr)
	if err != nil {
		t.Fatal(err)
	}
	qs := score.GroupQueries(s, tr, score.DefaultGroupQueries, score.DefaultGroupSeed)
	// eval scores ts against the truth; the perturbed tables are scored
	// in memory, the true copy through the files (the round trip).
	eval := func(syn *score.Tables) *score.TablesScore {
		t.Helper()
		sc, err := score.ScoreTables(s, truth, syn, names)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Groups, err = score.ScoreGroups(s, truth, syn, qs, score.DefaultGroupSeed); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	dir := t.TempDir()
	if err := tablestest.Write(ctx, dir, s, truth); err != nil {
		t.Fatal(err)
	}
	syn, err := score.SyntheticTables(ctx, s, tr, dir, names)
	if err != nil {
		t.Fatal(err)
	}
	zero := eval(syn)
	// The join of the true tables has the true join's rows (score.Truth,
	// an independent SQL join).
	flat, err := score.Truth(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if zero.TrueJoinRows != int64(len(flat.Rows)) || zero.JoinRows != zero.TrueJoinRows {
		t.Errorf("join rows: tables' %d, true tables' %d, true join %d", zero.JoinRows, zero.TrueJoinRows, len(flat.Rows))
	}
	for _, ts := range zero.Tables {
		if ts.TrueRows != ts.Rows || ts.MaxTVD != 0 || len(ts.Marginals) == 0 {
			t.Errorf("true copy: table %s: rows %d of %d, max TVD %v over %d marginals", ts.Table, ts.Rows, ts.TrueRows, ts.MaxTVD, len(ts.Marginals))
		}
	}
	for _, f := range zero.FanOuts {
		if f.TVD != 0 || f.TrueMean <= 1 {
			t.Errorf("true copy: fan-out %s→%s TVD %v (true mean %v)", f.Parent, f.Child, f.TVD, f.TrueMean)
		}
	}
	if len(zero.Siblings) == 0 {
		t.Errorf("true copy: no sibling agreement scored")
	}
	for _, sb := range zero.Siblings {
		if sb.Synthetic != sb.True || sb.Pairs != sb.TruePairs || sb.TruePairs == 0 {
			t.Errorf("true copy: siblings %+v", sb)
		}
	}
	if g := zero.Groups; g.Mean != 0 || g.Queries != score.DefaultGroupQueries || len(g.Edges) != len(tr.Edges) || g.ZeroTrue > g.Queries/2 {
		t.Errorf("true copy: group queries %+v", g)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	sh := tablestest.Clone(truth)
	tablestest.ShuffleColumn(sh, c.shuffleTable, c.shuffleCol, rng)
	got := eval(sh)
	t.Logf("shuffled %s: groups mean %.4f median %.4f", names[c.shuffleCol], got.Groups.Mean, got.Groups.Median)
	if got.Groups.Mean < c.minGroups {
		t.Errorf("shuffled %s: group-query mean error %v < %v", names[c.shuffleCol], got.Groups.Mean, c.minGroups)
	}
	for _, ts := range got.Tables {
		for _, m := range ts.Marginals {
			t.Logf("shuffled: %s %v TVD %.4f", ts.Table, m.Columns, m.TVD)
			if len(m.Columns) == 1 && m.TVD > 1e-12 {
				t.Errorf("shuffled: 1-way %v moved by %v", m.Columns, m.TVD)
			}
			if c.minPair > 0 && ts.Table == c.shuffleTable && len(m.Columns) == 2 && slices.Contains(m.Columns, names[c.shuffleCol]) && m.TVD < c.minPair {
				t.Errorf("shuffled: %v TVD %v < %v", m.Columns, m.TVD, c.minPair)
			}
		}
	}

	re := tablestest.Clone(truth)
	tablestest.ReassignChildren(re, c.reassign, rng)
	got = eval(re)
	t.Logf("reassigned %s: groups mean %.4f median %.4f", c.reassign, got.Groups.Mean, got.Groups.Median)
	if got.Groups.Mean < c.minGroupsRnd {
		t.Errorf("reassigned %s: group-query mean error %v < %v", c.reassign, got.Groups.Mean, c.minGroupsRnd)
	}
	for _, f := range got.FanOuts {
		t.Logf("reassigned: fan-out %s→%s TVD %.4f", f.Parent, f.Child, f.TVD)
		if f.Child == c.reassign && f.TVD < c.minFanOut {
			t.Errorf("reassigned %s: fan-out TVD %v < %v", c.reassign, f.TVD, c.minFanOut)
		}
	}
	for _, ts := range got.Tables {
		if ts.MaxTVD > 1e-12 {
			t.Errorf("reassigned: table %s marginals moved (max TVD %v)", ts.Table, ts.MaxTVD)
		}
	}
	// Children given random parents are no more alike than random pairs
	// of children: on a column where true siblings are clearly alike
	// (True − TrueRandom ≥ minSiblingGap), the reassigned siblings'
	// agreement lands within a quarter of that gap of TrueRandom.
	alike := 0
	for _, sb := range got.Siblings {
		t.Logf("reassigned: siblings %s→%s %s: true %.3f, random pairs %.3f, reassigned %.3f", sb.Parent, sb.Child, sb.Column, sb.True, sb.TrueRandom, sb.Synthetic)
		gap := sb.True - sb.TrueRandom
		if sb.Child != c.reassign || gap < minSiblingGap {
			continue
		}
		alike++
		if math.Abs(sb.Synthetic-sb.TrueRandom) > gap/4 {
			t.Errorf("reassigned %s: siblings alike on %s in %.3f of pairs, random pairs %.3f, true siblings %.3f", c.reassign, sb.Column, sb.Synthetic, sb.TrueRandom, sb.True)
		}
	}
	if c.alike && alike == 0 {
		t.Errorf("reassigned %s: no column whose true siblings are alike (gap ≥ %v): the check is empty", c.reassign, minSiblingGap)
	}
}

// minSiblingGap is how much more often true siblings must agree than
// random pairs for evaluateTables to check a column's sibling agreement.
const minSiblingGap = 0.05

// TestSiblingAgreementOracle: the sibling agreement of random small
// tables (skewed parents, few bins) against a count over every pair of
// child rows from the definition: pairs of distinct rows with the same
// parent, and how many of them share the column's bin; and the random
// pairs' share over every pair of distinct true child rows.
func TestSiblingAgreementOracle(t *testing.T) {
	s := loadSpec(t, "tpch", "synth.yaml")
	tr, err := score.OwnershipTree(s)
	if err != nil {
		t.Fatal(err)
	}
	sizes := s.ReleaseSizes()
	names := layout.ColumnNames(s)
	rng := rand.New(rand.NewPCG(13, 14))
	random := func() *score.Tables {
		ts := &score.Tables{Tree: tr}
		for _, name := range tr.Tables {
			e := &score.Entities{Table: name, Cols: tr.Columns[name]}
			edge, hasParent := tr.ParentEdge(name)
			n := 5 + rng.IntN(30)
			if hasParent {
				n = 20 + rng.IntN(200)
			}
			for range n {
				r := make([]int, len(e.Cols))
				for j, p := range e.Cols {
					r[j] = rng.IntN(min(sizes[p], 3))
				}
				e.Rows = append(e.Rows, r)
				if hasParent {
					np := len(ts.Get(edge.Parent).Rows)
					e.Parent = append(e.Parent, min(rng.IntN(np), rng.IntN(np)))
				}
			}
			ts.Tables = append(ts.Tables, e)
		}
		return ts
	}
	// brute counts, over every pair of distinct rows of child that
	// siblings accepts, the pairs and those agreeing on column j.
	brute := func(child *score.Entities, j int, siblings bool) (agree, pairs int64) {
		for a := range child.Rows {
			for b := a + 1; b < len(child.Rows); b++ {
				if siblings && child.Parent[a] != child.Parent[b] {
					continue
				}
				pairs++
				if child.Rows[a][j] == child.Rows[b][j] {
					agree++
				}
			}
		}
		return agree, pairs
	}
	ratio := func(a, b int64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	checked := 0
	for trial := range 5 {
		truth, syn := random(), random()
		sc, err := score.ScoreTables(s, truth, syn, names)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, e := range tr.Edges {
			tc, sc2 := truth.Get(e.Child), syn.Get(e.Child)
			for j, p := range tc.Cols {
				got := sc.Siblings[k]
				k++
				ta, tp := brute(tc, j, true)
				sa, sp := brute(sc2, j, true)
				ra, rp := brute(tc, j, false)
				want := score.SiblingScore{Parent: e.Parent, Child: e.Child, Column: names[p],
					True: ratio(ta, tp), Synthetic: ratio(sa, sp), TruePairs: tp, Pairs: sp, TrueRandom: ratio(ra, rp)}
				if got != want {
					t.Fatalf("trial %d: %+v, want %+v", trial, got, want)
				}
				if tp > 0 && ta > 0 && ta < tp {
					checked++
				}
			}
		}
		if k != len(sc.Siblings) {
			t.Fatalf("trial %d: %d sibling scores, want %d", trial, len(sc.Siblings), k)
		}
	}
	if checked < 10 {
		t.Errorf("only %d sibling scores with some but not all pairs agreeing: the oracle checks little", checked)
	}
}

// TestTrueTablesOracle: the true customer table of examples/tpch/nation.yaml
// (region name folded in through nation) and its orders per customer,
// against a brute-force count over the CSV files in Go.
func TestTrueTablesOracle(t *testing.T) {
	ctx := context.Background()
	s := loadSpec(t, "tpch", "nation.yaml")
	tr, err := score.OwnershipTree(s)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := score.TrueTables(ctx, s, tr)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) [][]string {
		f, err := os.Open(filepath.Join("..", "..", "testdata", "tpch", name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		recs, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return recs[1:]
	}
	region := map[string]string{}
	for _, r := range read("region") {
		region[r[0]] = r[1]
	}
	nationRegion := map[string]string{}
	for _, r := range read("nation") {
		nationRegion[r[0]] = region[r[2]]
	}
	orders := map[string]int{}
	for _, r := range read("orders") {
		orders[r[1]]++
	}
	rname := s.Column(spec.ColumnRef{Table: "region", Column: "r_name"})
	want := map[int]int{}
	wantFan := map[int]int{}
	for _, r := range read("customer") {
		b, err := rname.Bin(nationRegion[r[3]])
		if err != nil {
			t.Fatal(err)
		}
		want[b]++
		wantFan[score.FanOutBin(orders[r[0]])]++
	}
	cust := ts.Get("customer")
	got := map[int]int{}
	for _, r := range cust.Rows {
		got[r[0]]++ // r_name is customer's first released column
	}
	if !maps.Equal(got, want) {
		t.Errorf("r_name over customers %v, want %v", got, want)
	}
	n := make([]int, len(cust.Rows))
	for _, p := range ts.Get("orders").Parent {
		n[p]++
	}
	gotFan := map[int]int{}
	for _, k := range n {
		gotFan[score.FanOutBin(k)]++
	}
	if !maps.Equal(gotFan, wantFan) || wantFan[0] == 0 {
		t.Errorf("orders per customer by bin %v, want %v (with customers without orders)", gotFan, wantFan)
	}
}

// TestSyntheticTablesIntegrity: a foreign key that does not resolve, a
// repeated primary key and a value outside its domain are errors naming
// the file.
func TestSyntheticTablesIntegrity(t *testing.T) {
	ctx := context.Background()
	s := loadSpec(t, "tpch", "synth.yaml")
	names := layout.ColumnNames(s)
	tr, err := score.OwnershipTree(s)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := score.TrueTables(ctx, s, tr)
	if err != nil {
		t.Fatal(err)
	}
	// A small release: the first 20 customers, their orders and lines.
	small := &score.Tables{Tree: tr}
	keep := map[string]map[int]int{}
	for _, e := range truth.Tables {
		edge, hasParent := tr.ParentEdge(e.Table)
		out := &score.Entities{Table: e.Table, Cols: e.Cols}
		keep[e.Table] = map[int]int{}
		for i, r := range e.Rows {
			p := -1
			if hasParent {
				var ok bool
				if p, ok = keep[edge.Parent][e.Parent[i]]; !ok {
					continue
				}
				out.Parent = append(out.Parent, p)
			} else if i >= 20 {
				continue
			}
			keep[e.Table][i] = len(out.Rows)
			out.Rows = append(out.Rows, r)
		}
		small.Tables = append(small.Tables, out)
	}
	for _, c := range []struct {
		name, table, sql, want string
	}{
		{"dangling foreign key", "orders", `SELECT * REPLACE (CASE WHEN o_orderkey = 3 THEN 999999 ELSE o_custkey END AS o_custkey) FROM t`, "does not resolve"},
		{"repeated key", "orders", `SELECT * REPLACE (CASE WHEN o_orderkey = 3 THEN 2 ELSE o_orderkey END AS o_orderkey) FROM t`, "is repeated"},
		{"out of domain", "lineitem", `SELECT * REPLACE (CASE WHEN l_linenumber = 1 THEN 'X' ELSE l_returnflag END AS l_returnflag) FROM t`, "l_returnflag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tablestest.Write(ctx, dir, s, small); err != nil {
				t.Fatal(err)
			}
			if _, err := score.SyntheticTables(ctx, s, tr, dir, names); err != nil {
				t.Fatalf("intact release: %v", err)
			}
			path := score.TablePath(dir, c.table)
			db, err := sql.Open("duckdb", "")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			q := "CREATE TABLE t AS SELECT * FROM read_parquet('" + path + "'); COPY (" + c.sql + ") TO '" + path + "' (FORMAT parquet)"
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
			_, err = score.SyntheticTables(ctx, s, tr, dir, names)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("err %v, want one naming %s and %q", err, path, c.want)
			}
		})
	}
}

func TestFanOutBinAndGroupError(t *testing.T) {
	for n, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 2, 4: 3, 7: 3, 8: 4, 15: 4, 16: 5} {
		if got := score.FanOutBin(n); got != want {
			t.Errorf("FanOutBin(%d) = %d, want %d", n, got, want)
		}
	}
	if l := score.FanOutLabel(3); l != "4–7" {
		t.Errorf("FanOutLabel(3) = %q", l)
	}
	for _, c := range []struct {
		t, y    float64
		n, nHat int
		want    float64
	}{
		{50, 100, 1000, 2000, 0},       // rescaled to the true population
		{0, 10, 1000, 1000, 1},         // floor: 1 % of N
		{200, 100, 1000, 1000, 0.5},    // relative to the truth
		{200, 100, 1000, 0, 1},         // no synthetic parent
		{5, 5, 100, 100, 0},            // exact
		{0.05, 0, 10, 10, 0.05 / 0.1},  // floor 0.1 above the truth
		{100, 150, 1000, 1000, 0.5},    // over
		{100, 50, 1000, 1000 / 2, 0.0}, // over, rescaled
	} {
		if got := score.GroupError(c.t, c.y, c.n, c.nHat); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("GroupError(%v, %v, %d, %d) = %v, want %v", c.t, c.y, c.n, c.nHat, got, c.want)
		}
	}
}

// TestGroupCountOracle: group queries counted on random small tables
// (random parents, bins and queries from the generator) agree with a
// direct count from the definition.
func TestGroupCountOracle(t *testing.T) {
	s := loadSpec(t, "tpch", "synth.yaml")
	tr, err := score.OwnershipTree(s)
	if err != nil {
		t.Fatal(err)
	}
	sizes := s.ReleaseSizes()
	rng := rand.New(rand.NewPCG(11, 12))
	qs := score.GroupQueries(s, tr, 400, 99)
	for trial := range 5 {
		ts := &score.Tables{Tree: tr}
		for _, name := range tr.Tables {
			e := &score.Entities{Table: name, Cols: tr.Columns[name]}
			n := 5 + rng.IntN(40)
			edge, hasParent := tr.ParentEdge(name)
			if hasParent {
				n = 20 + rng.IntN(300)
			}
			for range n {
				r := make([]int, len(e.Cols))
				for j, p := range e.Cols {
					r[j] = rng.IntN(sizes[p])
				}
				e.Rows = append(e.Rows, r)
				if hasParent {
					// Skewed parents: a few get many children.
					np := len(ts.Get(edge.Parent).Rows)
					e.Parent = append(e.Parent, min(rng.IntN(np), rng.IntN(np)))
				}
			}
			ts.Tables = append(ts.Tables, e)
		}
		nonzero := 0
		for _, q := range qs {
			p, c := ts.Get(q.Parent), ts.Get(q.Child)
			want := 0
			for i, pr := range p.Rows {
				var kids [][]int
				for k, par := range c.Parent {
					if par == i {
						kids = append(kids, c.Rows[k])
					}
				}
				if len(kids) < q.FanLo || (q.FanHi >= 0 && len(kids) > q.FanHi) {
					continue
				}
				if q.ParentCol >= 0 && !slices.Contains(q.ParentSet, pr[slices.Index(p.Cols, q.ParentCol)]) {
					continue
				}
				hits := 0
				for _, k := range kids {
					if q.ChildCol < 0 || slices.Contains(q.ChildSet, k[slices.Index(c.Cols, q.ChildCol)]) {
						hits++
					}
				}
				if hits >= q.K {
					want++
				}
			}
			got, err := score.GroupCount(s, ts, q)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("trial %d: %s: got %d, want %d", trial, q.String(layout.ColumnNames(s)), got, want)
			}
			if want > 0 {
				nonzero++
			}
		}
		if nonzero < len(qs)/4 {
			t.Errorf("trial %d: only %d of %d queries have a non-zero answer: the oracle checks little", trial, nonzero, len(qs))
		}
	}
}
