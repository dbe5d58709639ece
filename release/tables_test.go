package release

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
)

// tablesRelease releases example name with release.output tables (and
// release.sibling_classes when siblings).
func tablesRelease(t testing.TB, name string, eps float64, src dp.Source, siblings ...bool) (*spec.Spec, *Summary) {
	t.Helper()
	s := exampleSpec(t, name)
	s.Privacy.Epsilon = eps
	s.Release.Output = spec.OutputTables
	s.Release.SiblingClasses = len(siblings) > 0 && siblings[0]
	sum, err := Run(context.Background(), Options{Spec: s, OutDir: t.TempDir(), Engine: "duckdb", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return s, sum
}

func openDuck(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func queryInt(t testing.TB, db *sql.DB, q string) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n.Int64
}

// TestTablesIntegrity: a tables release of the TPC-H example (unit
// customer, ε = 1, fresh noise) writes customer, orders and lineitem with
// unique primary keys and foreign keys that all resolve, and its join file
// holds exactly the join of those tables: the same number of rows and the
// same count in every cell of the released columns (checked by DuckDB on
// the files, not by the writer's own bookkeeping); with and without
// sibling classes.
func TestTablesIntegrity(t *testing.T) {
	if testing.Short() {
		t.Skip("a TPC-H tables release; skipped under -short")
	}
	for _, siblings := range []bool{false, true} {
		t.Run(fmt.Sprintf("siblings=%v", siblings), func(t *testing.T) { tablesIntegrity(t, siblings) })
	}
}

func tablesIntegrity(t *testing.T, siblings bool) {
	s, sum := tablesRelease(t, "tpch", 1, dp.NewSource(), siblings)
	rep, err := os.ReadFile(sum.Report)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(string(rep), "sibling"); got != siblings {
		t.Fatalf("sibling classes %v, but the report names them: %v", siblings, got)
	}
	db := openDuck(t)
	f := func(table string) string {
		return sqlString(filepath.Join(sum.Dir, layout.TablesDir, table+".parquet"))
	}
	for _, tc := range []struct{ table, pk string }{{"customer", "c_custkey"}, {"orders", "o_orderkey"}, {"lineitem", "l_orderkey, l_linenumber"}} {
		n := queryInt(t, db, "SELECT count(*) FROM "+f(tc.table))
		d := queryInt(t, db, "SELECT count(*) FROM (SELECT DISTINCT "+tc.pk+" FROM "+f(tc.table)+")")
		nulls := queryInt(t, db, "SELECT count(*) FROM "+f(tc.table)+" WHERE ("+strings.ReplaceAll(tc.pk, ",", " IS NULL OR ")+" IS NULL)")
		if n == 0 || d != n || nulls != 0 {
			t.Fatalf("%s: %d rows, %d distinct keys (%s), %d NULL keys", tc.table, n, d, tc.pk, nulls)
		}
	}
	for _, tc := range []struct{ child, fk, parent, pk string }{{"orders", "o_custkey", "customer", "c_custkey"}, {"lineitem", "l_orderkey", "orders", "o_orderkey"}} {
		orphans := queryInt(t, db, fmt.Sprintf("SELECT count(*) FROM %s c ANTI JOIN %s p ON c.%s = p.%s", f(tc.child), f(tc.parent), tc.fk, tc.pk))
		if orphans != 0 {
			t.Fatalf("%s.%s: %d rows reference no %s", tc.child, tc.fk, orphans, tc.parent)
		}
	}
	names := layout.ColumnNames(s)
	cols := strings.Join(names, ", ")
	join := "SELECT " + cols + " FROM " + f("customer") + " JOIN " + f("orders") + " ON o_custkey = c_custkey JOIN " + f("lineitem") + " ON l_orderkey = o_orderkey"
	diff := queryInt(t, db, fmt.Sprintf(`SELECT count(*) FROM (
		(SELECT %[1]s, count(*) n FROM (%[2]s) GROUP BY ALL EXCEPT SELECT %[1]s, count(*) n FROM %[3]s GROUP BY ALL)
		UNION ALL
		(SELECT %[1]s, count(*) n FROM %[3]s GROUP BY ALL EXCEPT SELECT %[1]s, count(*) n FROM (%[2]s) GROUP BY ALL))`, cols, join, sqlString(sum.Parquet)))
	if diff != 0 {
		t.Fatalf("the join file differs from the join of the tables in %d cell counts", diff)
	}
	if rows := queryInt(t, db, "SELECT count(*) FROM ("+join+")"); rows != sum.Rows {
		t.Fatalf("the join of the tables has %d rows, the join file %d", rows, sum.Rows)
	}
}

// TestTablesNullable: a nullable released column of a child table (issue
// 36's NULL bin) is written to its table as NULL: the table file's column
// is optional, and the join of the written tables has, cell for cell, the
// join file's counts, NULLs included (the writer writes a table column by
// column from each bin's value, NULL for the NULL bin).
func TestTablesNullable(t *testing.T) {
	dir := t.TempDir()
	var u, o strings.Builder
	u.WriteString("u_id\n")
	o.WriteString("o_id,o_ref,o_cat\n")
	cats := []string{"c0", "c1", ""}
	oid := 0
	for i := range 400 {
		fmt.Fprintf(&u, "%d\n", i)
		for k := range i % 4 {
			fmt.Fprintf(&o, "%d,%d,%s\n", oid, i, cats[(i+k)%3])
			oid++
		}
	}
	y := `privacy: {epsilon: 4, delta: 1e-6, unit: u}
tables:
  - name: u
    source: u.csv
    primary_key: u_id
    columns: {u_id: {type: key}}
  - name: o
    source: o.csv
    primary_key: o_id
    columns: {o_id: {type: key}, o_ref: {type: key}, o_cat: {type: categorical, values: [c0, c1], nullable: true}}
join: [o.o_ref = u.u_id]
release: {columns: [o_cat], output: tables}
`
	sum := releaseFiles(t, dir, map[string]string{"u.csv": u.String(), "o.csv": o.String()}, y, dp.NewSeededSource(3))
	db := openDuck(t)
	of := sqlString(filepath.Join(sum.Dir, layout.TablesDir, "o.parquet"))
	nulls := queryInt(t, db, "SELECT count(*) FROM "+of+" WHERE o_cat IS NULL")
	if nulls == 0 {
		t.Fatalf("the o table holds no NULL o_cat (%d rows)", queryInt(t, db, "SELECT count(*) FROM "+of))
	}
	diff := queryInt(t, db, fmt.Sprintf(`SELECT count(*) FROM (
		(SELECT o_cat, count(*) FROM %[1]s GROUP BY ALL EXCEPT SELECT o_cat, count(*) FROM %[2]s GROUP BY ALL)
		UNION ALL (SELECT o_cat, count(*) FROM %[2]s GROUP BY ALL EXCEPT SELECT o_cat, count(*) FROM %[1]s GROUP BY ALL))`, of, sqlString(sum.Parquet)))
	if diff != 0 {
		t.Fatalf("the o table and the join file differ in %d counts of o_cat (NULL included)", diff)
	}
}

// TestTablesPublicKeys: a tables release of the TPC-H example with the
// public lookups nation and region folded into customer writes
// customer.c_nationkey with real nation keys, each a nation of the row's
// released region: customer ⋈ nation ⋈ region (the public CSV files)
// gives back every row's r_name, and every key resolves.
func TestTablesPublicKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("a TPC-H tables release; skipped under -short")
	}
	s, sum := tablesRelease(t, "tpch/nation", 4, dp.NewSource())
	db := openDuck(t)
	cust := sqlString(filepath.Join(sum.Dir, layout.TablesDir, "customer.parquet"))
	nation, region := sqlString(s.Table("nation").Source), sqlString(s.Table("region").Source)
	rows := queryInt(t, db, "SELECT count(*) FROM "+cust)
	keys := queryInt(t, db, "SELECT count(DISTINCT c_nationkey) FROM "+cust)
	bad := queryInt(t, db, fmt.Sprintf(`SELECT count(*) FROM %s c LEFT JOIN read_csv(%s) n ON c.c_nationkey = n.n_nationkey
		LEFT JOIN read_csv(%s) r ON n.n_regionkey = r.r_regionkey WHERE r.r_name IS DISTINCT FROM c.r_name`, cust, nation, region))
	if rows == 0 || bad != 0 {
		t.Fatalf("customer: %d rows, %d whose c_nationkey does not lead to their r_name", rows, bad)
	}
	if keys < 10 {
		t.Fatalf("customer: %d distinct nation keys among %d rows (25 nations, five a region)", keys, rows)
	}
}

// TestTablesReportClip: the report's per-edge fan-out fields, recomputed
// by DuckDB from the written tables. A two-table release (units with 0
// to 11 o rows, ε = 4, seeded) reports the edge's clip τ, the share of
// the u file's rows whose number of o rows lies in the clipped bin
// [low, τ] (fanout_parents_at_clip), and the share of
// the o rows under them (fanout_children_at_clip); no parent has more
// than τ children. Two seeds, so that at least one draws parents at the
// clip (checked: the shares are not all 0).
func TestTablesReportClip(t *testing.T) {
	dir := t.TempDir()
	var u, o strings.Builder
	u.WriteString("u_id\n")
	o.WriteString("o_id,o_ref,o_cat\n")
	oid := 0
	for i := range 600 {
		fmt.Fprintf(&u, "%d\n", i)
		for k := range (i * 7) % 12 {
			fmt.Fprintf(&o, "%d,%d,c%d\n", oid, i, (i+k)%2)
			oid++
		}
	}
	for name, body := range map[string]string{"u.csv": u.String(), "o.csv": o.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	y := `privacy: {epsilon: 4, delta: 1e-6, unit: u}
tables:
  - name: u
    source: u.csv
    primary_key: u_id
    columns: {u_id: {type: key}}
  - name: o
    source: o.csv
    primary_key: o_id
    columns: {o_id: {type: key}, o_ref: {type: key}, o_cat: {type: categorical, values: [c0, c1]}}
join: [o.o_ref = u.u_id]
release: {columns: [o_cat], output: tables}
`
	s, err := spec.Parse([]byte(y), filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var nonzero int
	for seed := range uint64(2) {
		sum, err := Run(context.Background(), Options{Spec: s, OutDir: filepath.Join(dir, fmt.Sprint("out", seed)), Engine: "duckdb", Source: dp.NewSeededSource(seed + 1)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(sum.Report)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Parameters struct {
				Clips    map[string]int64   `json:"fanout_clips"`
				Parents  map[string]float64 `json:"fanout_parents_at_clip"`
				Children map[string]float64 `json:"fanout_children_at_clip"`
			} `json:"parameters"`
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		const edge = "u→o"
		tau, ok := rep.Parameters.Clips[edge]
		j := slices.IndexFunc(fanoutLows[1:], func(l int64) bool { return l-1 == tau }) // fanoutClip(j) = τ
		if !ok || j < 1 {
			t.Fatalf("seed %d: clip %d of %s is no rung of the ladder (report %s)", seed, tau, edge, b)
		}
		low := fanoutLows[j]
		db := openDuck(t)
		uf := sqlString(filepath.Join(sum.Dir, layout.TablesDir, "u.parquet"))
		of := sqlString(filepath.Join(sum.Dir, layout.TablesDir, "o.parquet"))
		fan := fmt.Sprintf("SELECT u.u_id, count(o.o_ref) AS n FROM %s u LEFT JOIN %s o ON o.o_ref = u.u_id GROUP BY u.u_id", uf, of)
		units := queryInt(t, db, "SELECT count(*) FROM "+uf)
		kids := queryInt(t, db, "SELECT count(*) FROM "+of)
		atClip := queryInt(t, db, fmt.Sprintf("SELECT count(*) FROM (%s) WHERE n >= %d", fan, low))
		under := queryInt(t, db, fmt.Sprintf("SELECT coalesce(sum(n), 0) FROM (%s) WHERE n >= %d", fan, low))
		above := queryInt(t, db, fmt.Sprintf("SELECT count(*) FROM (%s) WHERE n > %d", fan, tau))
		if units == 0 || kids == 0 || above != 0 {
			t.Fatalf("seed %d: %d units, %d o rows, %d units above the clip %d", seed, units, kids, above, tau)
		}
		wantP, wantC := float64(atClip)/float64(units), float64(under)/float64(kids)
		if p, c := rep.Parameters.Parents[edge], rep.Parameters.Children[edge]; math.Abs(p-wantP) > 1e-12 || math.Abs(c-wantC) > 1e-12 {
			t.Fatalf("seed %d (clip %d, bin from %d): parents at the clip %v, children %v; the files say %v and %v", seed, tau, low, p, c, wantP, wantC)
		}
		if under > 0 {
			nonzero++
		}
		t.Logf("seed %d: clip %d (bin from %d): parents at the clip %.4f, children under them %.4f", seed, tau, low, wantP, wantC)
	}
	if nonzero == 0 {
		t.Fatal("no seed drew a parent at the clip: the check is empty")
	}
}

// TestTablesBranching: a unit with two child tables (u → a, u → b, a tree
// that is not a chain) releases both children, and its join file holds
// exactly the join of the written tables, cell for cell: each unit's a
// rows times its b rows (the join path that expands the product per
// unit, which no chain reaches), checked by DuckDB on the files.
func TestTablesBranching(t *testing.T) {
	dir := t.TempDir()
	var u, a, b strings.Builder
	u.WriteString("u_id,u_cat\n")
	a.WriteString("a_id,a_ref,a_cat\n")
	b.WriteString("b_id,b_ref,b_cat\n")
	aid, bid := 0, 0
	for i := range 300 {
		fmt.Fprintf(&u, "%d,%s\n", i, []string{"x", "y"}[i%2])
		for k := range i % 4 {
			fmt.Fprintf(&a, "%d,%d,%s\n", aid, i, []string{"a0", "a1", "a2"}[(i+k)%3])
			aid++
		}
		for k := range (i / 2) % 3 {
			fmt.Fprintf(&b, "%d,%d,%s\n", bid, i, []string{"b0", "b1"}[(i*k)%2])
			bid++
		}
	}
	y := `privacy: {epsilon: 4, delta: 1e-6, unit: u}
tables:
  - name: u
    source: u.csv
    primary_key: u_id
    columns: {u_id: {type: key}, u_cat: {type: categorical, values: [x, y]}}
  - name: a
    source: a.csv
    primary_key: a_id
    columns: {a_id: {type: key}, a_ref: {type: key}, a_cat: {type: categorical, values: [a0, a1, a2]}}
  - name: b
    source: b.csv
    primary_key: b_id
    columns: {b_id: {type: key}, b_ref: {type: key}, b_cat: {type: categorical, values: [b0, b1]}}
join: [a.a_ref = u.u_id, b.b_ref = u.u_id]
release: {columns: [u_cat, a_cat, b_cat], output: tables}
`
	sum := releaseFiles(t, dir, map[string]string{"u.csv": u.String(), "a.csv": a.String(), "b.csv": b.String()}, y, dp.NewSource())
	db := openDuck(t)
	f := func(table string) string {
		return sqlString(filepath.Join(sum.Dir, layout.TablesDir, table+".parquet"))
	}
	for _, tb := range []string{"u", "a", "b"} {
		if n := queryInt(t, db, "SELECT count(*) FROM "+f(tb)); n == 0 {
			t.Fatalf("table %s is empty", tb)
		}
	}
	join := "SELECT u_cat, a_cat, b_cat FROM " + f("u") + " JOIN " + f("a") + " ON a_ref = u_id JOIN " + f("b") + " ON b_ref = u_id"
	diff := queryInt(t, db, fmt.Sprintf(`SELECT count(*) FROM (
		(SELECT u_cat, a_cat, b_cat, count(*) n FROM (%[1]s) GROUP BY ALL EXCEPT SELECT u_cat, a_cat, b_cat, count(*) n FROM %[2]s GROUP BY ALL)
		UNION ALL
		(SELECT u_cat, a_cat, b_cat, count(*) n FROM %[2]s GROUP BY ALL EXCEPT SELECT u_cat, a_cat, b_cat, count(*) n FROM (%[1]s) GROUP BY ALL))`, join, sqlString(sum.Parquet)))
	if diff != 0 {
		t.Fatalf("the join file differs from the join of the tables in %d cell counts", diff)
	}
	if rows := queryInt(t, db, "SELECT count(*) FROM ("+join+")"); rows != sum.Rows || rows == 0 {
		t.Fatalf("the join of the tables has %d rows, the join file %d", rows, sum.Rows)
	}
}

// releaseFiles writes files (name → body) into dir and runs a release of
// the spec y, read as dir/synth.yaml, into dir/out on DuckDB with src.
func releaseFiles(t *testing.T, dir string, files map[string]string, y string, src dp.Source) *Summary {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := spec.Parse([]byte(y), filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), Options{Spec: s, OutDir: filepath.Join(dir, "out"), Engine: "duckdb", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
