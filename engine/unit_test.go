package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// unitShape is a join shape of the unit-histogram oracle: the unit table u
// and the tables that own rows through foreign keys.
type unitShape struct {
	name string
	// tables in spec order; parent[t] is the table t references (""
	// for the unit), public marks a lookup table.
	tables []string
	parent map[string]string
	public map[string]bool
}

var unitShapes = []unitShape{
	{name: "single", tables: []string{"u"}, parent: map[string]string{"u": ""}},
	{name: "chain", tables: []string{"u", "o", "l"}, parent: map[string]string{"u": "", "o": "u", "l": "o"}},
	{name: "star", tables: []string{"u", "o", "p"}, parent: map[string]string{"u": "", "o": "u", "p": "u"}},
	// g is public; o references it (a lookup, folded into o) and u.
	{name: "public", tables: []string{"u", "o", "g"}, parent: map[string]string{"u": "", "o": "u", "g": ""}, public: map[string]bool{"g": true}},
}

// unitInstance writes a random instance of sh into dir: every table has
// an id (its primary key), a categorical cat with values x/y/z, and a
// reference to its parent's id; references may be NULL or point at no
// row, ids may be text. It returns the spec and the rows (column → value).
func unitInstance(t *testing.T, r *rand.Rand, sh unitShape, dir string) (*spec.Spec, map[string][]map[string]string) {
	t.Helper()
	rows := map[string][]map[string]string{}
	ids := map[string][]string{}
	textIDs := r.IntN(4) == 0
	for _, tb := range sh.tables {
		n := r.IntN(7)
		if tb == "u" || sh.public[tb] {
			n = 1 + r.IntN(5)
		}
		for i := range n {
			id := fmt.Sprint(i + 1)
			if textIDs && i == 0 {
				id = "k" + id
			}
			ids[tb] = append(ids[tb], id)
		}
	}
	var y strings.Builder
	y.WriteString("privacy: {epsilon: 1, delta: 1e-6, unit: u}\ntables:\n")
	var join []string
	var released []string
	for _, tb := range sh.tables {
		header := []string{tb + "_id", tb + "_cat"}
		p := sh.parent[tb]
		if p != "" {
			header = append(header, tb+"_ref")
			join = append(join, fmt.Sprintf("%s.%s_ref = %s.%s_id", tb, tb, p, p))
		}
		if tb == "o" && sh.public["g"] {
			header = append(header, "o_g")
			join = append(join, "o.o_g = g.g_id")
		}
		var data [][]string
		for _, id := range ids[tb] {
			row := map[string]string{tb + "_id": id, tb + "_cat": catValues[r.IntN(3)]}
			if p != "" {
				switch k := r.IntN(10); {
				case k == 0:
					row[tb+"_ref"] = "" // NULL: joins nothing
				case k == 1 || len(ids[p]) == 0:
					row[tb+"_ref"] = "99" // no such parent
				default:
					row[tb+"_ref"] = ids[p][r.IntN(len(ids[p]))]
				}
			}
			if tb == "o" && sh.public["g"] {
				row["o_g"] = ids["g"][r.IntN(len(ids["g"]))]
			}
			rows[tb] = append(rows[tb], row)
			var rec []string
			for _, h := range header {
				rec = append(rec, row[h])
			}
			data = append(data, rec)
		}
		src := writeCSV(t, dir, tb+".csv", header, data)
		fmt.Fprintf(&y, "  - name: %s\n    source: %s\n    primary_key: %s_id\n", tb, src, tb)
		if sh.public[tb] {
			y.WriteString("    public: true\n")
		}
		y.WriteString("    columns:\n")
		fmt.Fprintf(&y, "      %s_id: {type: key}\n      %s_cat: {type: categorical, values: [x, y, z]}\n", tb, tb)
		if p != "" {
			fmt.Fprintf(&y, "      %s_ref: {type: key}\n", tb)
		}
		if tb == "o" && sh.public["g"] {
			y.WriteString("      o_g: {type: key}\n")
		}
		released = append(released, tb+"."+tb+"_cat")
	}
	if len(join) > 0 {
		fmt.Fprintf(&y, "join: [%s]\n", strings.Join(join, ", "))
	}
	fmt.Fprintf(&y, "release:\n  columns: [%s]\n", strings.Join(released, ", "))
	s, err := spec.Parse([]byte(y.String()), filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatalf("%v\n%s", err, y.String())
	}
	return s, rows
}

// unitJoinRow is one row of an instance's join: its unit's id and the
// index of every table's cat value (in sh.tables order).
type unitJoinRow struct {
	unit string
	cats []int
}

// unitJoin enumerates the join of the instance in Go.
func unitJoin(sh unitShape, rows map[string][]map[string]string) []unitJoinRow {
	var out []unitJoinRow
	var walk func(i int, cur map[string]map[string]string)
	walk = func(i int, cur map[string]map[string]string) {
		if i == len(sh.tables) {
			var cats []int
			for _, tb := range sh.tables {
				cats = append(cats, slices.Index(catValues, cur[tb][tb+"_cat"]))
			}
			out = append(out, unitJoinRow{unit: cur["u"]["u_id"], cats: cats})
			return
		}
		tb := sh.tables[i]
		for _, row := range rows[tb] {
			if p := sh.parent[tb]; p != "" && (row[tb+"_ref"] == "" || row[tb+"_ref"] != cur[p][p+"_id"]) {
				continue
			}
			if tb == "g" && cur["o"]["o_g"] != row["g_id"] {
				continue
			}
			cur[tb] = row
			walk(i+1, cur)
			delete(cur, tb)
		}
	}
	walk(0, map[string]map[string]string{})
	return out
}

// unitOracle enumerates the join of the instance in Go and returns the
// bounded cells and the degree histogram of [Engine.UnitHistogram].
func unitOracle(sh unitShape, rows map[string][]map[string]string, grid, bound int64) (map[int64]int64, map[int64]int64) {
	out := unitJoin(sh, rows)
	n := map[string]int64{}
	for _, j := range out {
		n[j.unit]++
	}
	cells := map[int64]int64{}
	for _, j := range out {
		var cell int64
		for _, c := range j.cats {
			cell = cell*3 + int64(c)
		}
		cells[cell] += min(grid, bound/n[j.unit])
	}
	degs := map[int64]int64{}
	for _, c := range n {
		degs[c]++
	}
	return cells, degs
}

// unitStats are the unit statistics that an Engine reads from its
// tables and a UnitRows from the join's rows it stored.
type unitStats interface {
	UnitHistogram(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]Cell, []UnitDegree, error)
	UnitMarginalL2(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]Cell, error)
}

// TestUnitHistogramOracle compares the engine's bounded histogram and
// degree histogram with a Go enumeration of the join on random instances
// (several shapes, NULL and dangling references, text ids, units without
// rows, random grid and bound).
func TestUnitHistogramOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(stattest.Seed(t), 11))
	ctx := context.Background()
	e := openDSNTest(t, "duckdb::memory:")
	oneThread(t, e)
	// 80 random instances by default (a fresh seed each run, logged);
	// SYNTH_SLOW_AUDITS (.ci/run) checks 240.
	n := 80
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		n = 240
	}
	if testing.Short() {
		n = 40
	}
	for i := range n {
		sh := unitShapes[i%len(unitShapes)]
		dir := t.TempDir()
		s, rows := unitInstance(t, r, sh, dir)
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		f, err := s.Folding()
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Fold(ctx, f); err != nil {
			t.Fatal(err)
		}
		grid := []int64{1, 4, 16}[r.IntN(3)]
		bound := grid * (1 + r.Int64N(3))
		rel, col, _ := f.Locate("u", "u_id")
		cols := spec.FoldColumns(f, s.Release.Columns)
		key := UnitKey{Relation: rel, Column: col}
		wantCells, wantDegs := unitOracle(sh, rows, grid, bound)
		for k, v := range wantCells {
			if v == 0 {
				delete(wantCells, k) // a cell of weight-0 rows may or may not appear
			}
		}
		// The engine's statements, then the same from the join's rows
		// stored once (Engine.StoreUnitRows).
		stored, err := e.StoreUnitRows(ctx, f.Folded(), key, cols, s.ReleaseSizes())
		if err != nil {
			t.Fatalf("instance %d (%s): %v", i, sh.name, err)
		}
		if stored.own {
			t.Fatalf("instance %d (%s): the stored rows hold a cell outside the sizes: their statistics would be the engine's", i, sh.name)
		}
		for _, st := range []unitStats{e, stored} {
			cells, degs, err := st.UnitHistogram(ctx, f.Folded(), key, cols, s.ReleaseSizes(), grid, bound)
			if err != nil {
				t.Fatalf("instance %d (%s, %T): %v", i, sh.name, st, err)
			}
			got := nonZeroCells(cells)
			if fmt.Sprint(got) != fmt.Sprint(wantCells) {
				t.Fatalf("instance %d (%s, %T, grid %d, bound %d): cells %v, want %v; rows %v", i, sh.name, st, grid, bound, got, wantCells, rows)
			}
			if gotDegs := degreeMap(degs); fmt.Sprint(gotDegs) != fmt.Sprint(wantDegs) {
				t.Fatalf("instance %d (%s, %T): degrees %v, want %v; rows %v", i, sh.name, st, gotDegs, wantDegs, rows)
			}
		}
		// A statistic the stored rows do not hold (the degrees alone) is
		// the engine's.
		_, degs, err := stored.UnitHistogram(ctx, f.Folded(), key, nil, nil, grid, bound)
		if err != nil {
			t.Fatalf("instance %d (%s, degrees only): %v", i, sh.name, err)
		}
		if gotDegs := degreeMap(degs); fmt.Sprint(gotDegs) != fmt.Sprint(wantDegs) {
			t.Fatalf("instance %d (%s, degrees only): degrees %v, want %v; rows %v", i, sh.name, gotDegs, wantDegs, rows)
		}
		if err := stored.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// nonZeroCells maps each cell of cells with a non-zero count to it.
func nonZeroCells(cells []Cell) map[int64]int64 {
	m := map[int64]int64{}
	for _, c := range cells {
		if c.Count != 0 {
			m[c.Index] = c.Count
		}
	}
	return m
}

// degreeMap maps each row count of degs to its units.
func degreeMap(degs []UnitDegree) map[int64]int64 {
	m := map[int64]int64{}
	for _, d := range degs {
		m[d.Rows] = d.Units
	}
	return m
}

// TestCheckPrimaryKey: unique keys pass; a duplicated or NULL key is a
// DuplicateKeyError naming the table and its key, with the value and its
// count in its fields but not in its message (a private key).
func TestCheckPrimaryKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ids  []string
		want string // "" for no error
	}{
		{"unique", []string{"1", "2", "3"}, ""},
		{"duplicate", []string{"1", "2777", "2777"}, "2777"},
		{"null", []string{"1", "", "3"}, "NULL"},
		{"text duplicate", []string{"a", "bzq", "bzq"}, "bzq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var rows [][]string
			for _, id := range tc.ids {
				rows = append(rows, []string{id, "x", "1"})
			}
			src := writeCSV(t, dir, "o.csv", []string{"o_id", "o_cat", "o_ref"}, rows)
			usrc := writeCSV(t, dir, "u.csv", []string{"u_id"}, [][]string{{"1"}})
			y := fmt.Sprintf(`privacy: {epsilon: 1, delta: 1e-6}
tables:
  - name: u
    source: %s
    primary_key: u_id
    columns: {u_id: {type: key}}
  - name: o
    source: %s
    primary_key: o_id
    columns: {o_id: {type: key}, o_cat: {type: categorical, values: [x]}, o_ref: {type: key}}
join: [o.o_ref = u.u_id]
release: {columns: [o_cat]}
`, usrc, src)
			s, err := spec.Parse([]byte(y), filepath.Join(dir, "s.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			e, h := loadTest(t, s)
			err = e.CheckPrimaryKey(ctx, h, "o", []string{"o_id"})
			var dk *DuplicateKeyError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want == "":
			case !errors.As(err, &dk):
				t.Fatalf("error %v, want a DuplicateKeyError", err)
			case !strings.Contains(err.Error(), "table o") || !strings.Contains(err.Error(), "o_id"):
				t.Fatalf("error %q, want it to name table o and its key", err)
			case tc.want != "NULL" && (dk.Value[0] != tc.want || dk.Count != 2):
				t.Fatalf("error fields %q × %d, want %q × 2", dk.Value, dk.Count, tc.want)
			case tc.want == "NULL" && !dk.Null:
				t.Fatalf("error %v: want Null set", err)
			case tc.want != "NULL" && strings.Contains(err.Error(), tc.want):
				// The private key value stays out of the message (it
				// travels beyond the custodian); inspect shows it.
				t.Fatalf("error %q prints the private key value %q", err, tc.want)
			}
		})
	}
}
