package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// goIntegralKeyRE is integralKeyRE for the oracle.
var goIntegralKeyRE = regexp.MustCompile(`^` + integralKeyRE + `$`)

// goCanonicalKey is [canonicalKey] in Go: the key a text value stands for,
// "" for NULL.
func goCanonicalKey(v string) string {
	if goIntegralKeyRE.MatchString(v) {
		if ip, _, _ := strings.Cut(v, "."); ip != "-0" {
			return ip
		}
		return "0"
	}
	return v
}

// keyValue is one value of a key column in the oracle: its SQL literal
// for a Parquet column of type ty, its CSV text, and the key it stands
// for ("" for NULL).
type keyValue struct{ sql, key string }

// keyDomains are the values a key column of each type may hold: integers,
// DOUBLEs with .0 and −0.0, text that is or is not an integral number.
var keyDomains = map[string][]keyValue{
	"BIGINT": {{"0", "0"}, {"7", "7"}, {"76", "76"}, {"-3", "-3"}, {"NULL", ""}},
	"DOUBLE": {{"0.0", "0"}, {"-0.0", "0"}, {"7.0", "7"}, {"76.0", "76"}, {"-3.0", "-3"}, {"7.5", "7.5"}, {"1e16", "10000000000000000"}, {"NULL", ""}},
	"VARCHAR": {{"'7'", "7"}, {"'7.0'", "7"}, {"'07'", "07"}, {"'76.00'", "76"}, {"'-0.0'", "0"}, {"'-0'", "-0"}, {"'0'", "0"},
		{"'7.5'", "7.5"}, {"'7.50'", "7.50"}, {"'07.0'", "07.0"}, {"'1e3'", "1e3"}, {"'k'", "k"}, {"NULL", ""}},
}

// TestKeysIntegralOracle: random small instances whose key columns are
// Parquet BIGINT, Parquet DOUBLE (with .0 and −0.0), Parquet or CSV text
// (with "7.0", "07", "-0.0", NULL): the join size, every T_E and every
// relation's max degree equal brute force over the keys of goCanonicalKey
// — integral numbers are their integer, other texts stay themselves — on
// DuckDB, on PostgreSQL (with SYNTH_TEST_POSTGRES) and on the sharded
// cluster (with SYNTH_TEST_POSTGRES_CLUSTER).
func TestKeysIntegralOracle(t *testing.T) {
	forEachOpener(t, testKeysIntegralOracle)
	t.Run("cluster", func(t *testing.T) { clusterURL(t); testKeysIntegralOracle(t, openClusterTest) })
}

func testKeysIntegralOracle(t *testing.T, open func(testing.TB) *Engine) {
	seed := stattest.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0x6b657973))
	ctx := context.Background()
	e := open(t)
	oneThread(t, e)
	duck := duckTest(t)
	// Shapes of at most three relations: with a dozen values per key
	// type, longer joins are mostly empty.
	names := slices.Sorted(func(yield func(string) bool) {
		for k, rels := range shapes {
			if len(rels) <= 3 && !yield(k) {
				return
			}
		}
	})
	types := []string{"BIGINT", "DOUBLE", "VARCHAR"}
	n := 60
	if testing.Short() {
		n = 25
	}
	matched := 0
	for it := range n {
		dir := t.TempDir()
		shape := names[r.IntN(len(names))]
		in := &instance{spec: &spec.Spec{}, shape: shape}
		first := map[string]spec.ColumnRef{}
		for i, attrs := range shapes[shape] {
			name := fmt.Sprintf("r%d", i)
			csv := r.IntN(3) == 0
			var cols []spec.Column
			var tys []string
			for _, a := range attrs {
				ref := spec.ColumnRef{Table: name, Column: name + "_" + a}
				cols = append(cols, spec.Column{Name: ref.Column, Type: spec.Key})
				ty := "VARCHAR"
				if !csv {
					ty = types[r.IntN(len(types))]
				}
				tys = append(tys, ty)
				if f, ok := first[a]; ok {
					in.spec.Join = append(in.spec.Join, spec.JoinEq{Left: f, Right: ref})
				} else {
					first[a] = ref
				}
			}
			var tuples []map[string]string
			var recs [][]string
			sel := []string{}
			for k, c := range cols {
				sel = append(sel, "CAST(NULL AS "+tys[k]+") AS "+e.d.ident(c.Name))
			}
			selects := []string{"SELECT " + strings.Join(sel, ", ") + " WHERE FALSE"}
			for range r.IntN(12) {
				tu := map[string]string{}
				var rec, lits []string
				for k, c := range cols {
					dom := keyDomains[tys[k]]
					v := dom[r.IntN(len(dom))]
					tu[c.Name] = v.key
					lits = append(lits, "CAST("+v.sql+" AS "+tys[k]+")")
					text := strings.Trim(v.sql, "'")
					if v.sql == "NULL" {
						text = ""
					}
					rec = append(rec, text)
				}
				tuples = append(tuples, tu)
				recs = append(recs, rec)
				selects = append(selects, "SELECT "+strings.Join(lits, ", "))
			}
			var src string
			if csv {
				header := make([]string, len(cols))
				for k, c := range cols {
					header[k] = c.Name
				}
				// A one-column CSV record of an empty value is a blank
				// line, which the PostgreSQL load skips: give every
				// table a second column.
				header = append(header, "pad")
				for k := range recs {
					recs[k] = append(recs[k], "x")
				}
				src = writeCSV(t, dir, name+".csv", header, recs)
			} else {
				src = filepath.Join(dir, name+".parquet")
				if _, err := duck.ExecContext(ctx, "COPY ("+strings.Join(selects, " UNION ALL ")+") TO "+e.d.str(src)+" (FORMAT parquet)"); err != nil {
					t.Fatal(err)
				}
			}
			in.spec.Tables = append(in.spec.Tables, spec.Table{Name: name, Source: src, Columns: cols})
			in.rows = append(in.rows, tuples)
		}
		h, err := in.spec.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		in.h = h
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d, instance %d (%s): %s", seed, it, shape, fmt.Sprintf(format, args...))
		}
		if err := e.Load(ctx, in.spec); err != nil {
			fail("load: %v", err)
		}
		var size int64
		in.enumerate(h.All(), func([]int, map[string]string) { size++ })
		if got, err := e.JoinSize(ctx, h); err != nil || got != size {
			fail("JoinSize = %d, %v; want %d", got, err, size)
		}
		if size > 0 && h.Len() > 1 {
			matched++
		}
		for set := hypergraph.Set(1); set <= h.All(); set++ {
			if !h.Connected(set) {
				continue
			}
			groups := map[string]int64{}
			var want int64
			in.enumerate(set, func(_ []int, val map[string]string) {
				var key []string
				for _, a := range h.Boundary(set) {
					key = append(key, val[a])
				}
				k := strings.Join(key, "\x00")
				groups[k]++
				want = max(want, groups[k])
			})
			if got, err := e.MaxBoundaryCount(ctx, h, set); err != nil || got != want {
				fail("T_E(%v) = %d, %v; want %d", h.Names(set), got, err, want)
			}
		}
		for i := range h.Len() {
			rel := h.Relation(i)
			for a, col := range rel.Attrs {
				want := map[string]int64{}
				for _, tu := range in.rows[i] {
					if tu[col] != "" {
						want[tu[col]]++
					}
				}
				dgs, err := e.Degrees(ctx, h, i, []string{a})
				if err != nil {
					fail("Degrees(%s, %s): %v", rel.Name, a, err)
				}
				got := map[string]int64{}
				for _, dg := range dgs {
					got[dg.Values[0]] = dg.Count
				}
				if !mapsEqual(got, want) {
					fail("degrees of %s in %s = %v, want %v", a, rel.Name, got, want)
				}
			}
		}
	}
	t.Logf("%d of %d instances had a non-empty join", matched, n)
	if matched == 0 {
		t.Errorf("no instance had a non-empty join")
	}
}

// TestKeysIntegralJoin: 7.0 in a Parquet DOUBLE and "76.0" in a CSV file
// join 7 and 76 of another table; 7.5 and "07" stay keys of their own.
// Before integral keys were stored as their integer, the join was empty.
func TestKeysIntegralJoin(t *testing.T) {
	forEachOpener(t, testKeysIntegralJoin)
	t.Run("cluster", func(t *testing.T) { clusterURL(t); testKeysIntegralJoin(t, openClusterTest) })
}

func testKeysIntegralJoin(t *testing.T, open func(testing.TB) *Engine) {
	ctx := context.Background()
	dir := t.TempDir()
	e := open(t)
	pq := filepath.Join(dir, "a.parquet")
	if _, err := duckTest(t).ExecContext(ctx, "COPY (SELECT CAST(k AS DOUBLE) AS k FROM (VALUES (7.0), (7.5), (-0.0), ("+
		strconv.FormatFloat(math.Pow(2, 40), 'f', 1, 64)+")) AS t(k)) TO "+e.d.str(pq)+" (FORMAT parquet)"); err != nil {
		t.Fatal(err)
	}
	s := &spec.Spec{
		Tables: []spec.Table{
			{Name: "a", Source: pq, Columns: []spec.Column{{Name: "k", Type: spec.Key}}},
			{Name: "b", Source: writeCSV(t, dir, "b.csv", []string{"k", "x"}, [][]string{{"7", "1"}, {"76.0", "1"}, {"07", "1"}, {"0", "1"}, {"1099511627776", "1"}}),
				Columns: []spec.Column{{Name: "k", Type: spec.Key}}},
			{Name: "c", Source: writeCSV(t, dir, "c.csv", []string{"k", "x"}, [][]string{{"76", "1"}, {"7.50", "1"}}),
				Columns: []spec.Column{{Name: "k", Type: spec.Key}}},
		},
	}
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		l, r string
		want int64
	}{
		{"a", "b", 3}, // 7.0 = 7, −0.0 = 0, 2⁴⁰ = 1099511627776
		{"b", "c", 1}, // "76.0" = 76; "7.50" is not 7.5
		{"a", "c", 0},
	} {
		h, err := hypergraph.New([]hypergraph.Relation{{Name: c.l, Attrs: map[string]string{"k": "k"}}, {Name: c.r, Attrs: map[string]string{"k": "k"}}})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.JoinSize(ctx, h); err != nil || got != c.want {
			t.Errorf("|%s ⋈ %s| = %d, %v; want %d", c.l, c.r, got, err, c.want)
		}
	}
}
