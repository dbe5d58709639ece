package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/internal/tpchgen"
	"github.com/synth-dp/synth/spec"
)

// clusterEnv names the environment variable holding the coordinator URL of
// a sharded PostgreSQL cluster for the tests (scripts/pg-cluster.sh start
// DIR prints one); the cluster cases skip when it is unset.
const clusterEnv = "SYNTH_TEST_POSTGRES_CLUSTER"

// clusterURL returns the test cluster's URL, or skips the test.
func clusterURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(clusterEnv)
	if u == "" {
		t.Skipf("%s is not set: sharded PostgreSQL case skipped (start a cluster with scripts/pg-cluster.sh start DIR and export its URL)", clusterEnv)
	}
	if !strings.Contains(u, ShardsParam+"=") {
		t.Fatalf("%s = %s names no shards (%s=…)", clusterEnv, redact(u), ShardsParam)
	}
	return u
}

// openClusterTest opens an engine on the test cluster, closed at the end
// of the test.
func openClusterTest(t testing.TB) *Engine {
	t.Helper()
	e := openDSNTest(t, clusterURL(t))
	if _, ok := e.d.(shardedPostgres); !ok {
		t.Fatalf("the engine of %s is not sharded", redact(clusterURL(t)))
	}
	return e
}

func TestSplitShards(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		shards  []string
		err     string
	}{
		{in: "postgres://u@h:1/db", out: "postgres://u@h:1/db"},
		{in: "postgres://u@h:1/db?sslmode=disable", out: "postgres://u@h:1/db?sslmode=disable"},
		{in: "postgres://u@h:1/db?sslmode=disable&synth_shards=shard_1,shard_2", out: "postgres://u@h:1/db?sslmode=disable", shards: []string{"shard_1", "shard_2"}},
		{in: "postgres://u@h:1/db?synth_shards=a&work_mem=8MB", out: "postgres://u@h:1/db?work_mem=8MB", shards: []string{"a"}},
		{in: "postgres://u@h:1/db?synth_shards=s1%2Cs2", out: "postgres://u@h:1/db", shards: []string{"s1", "s2"}},
		{in: "postgres://u@h:1/db?synth_shards=", err: `"" is not a foreign server name`},
		{in: "postgres://u@h:1/db?synth_shards=a;drop", err: `"a;drop" is not a foreign server name`},
		{in: "postgres://u@h:1/db?synth_shards=a,a", err: `"a" appears twice`},
		{in: "postgres://u@h:1/db?synth_shards=a&synth_shards=b", err: "given twice"},
	} {
		out, shards, err := splitShards(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("splitShards(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || out != tc.out || !slices.Equal(shards, tc.shards) {
			t.Errorf("splitShards(%q) = %q, %q, %v; want %q, %q", tc.in, out, shards, err, tc.out, tc.shards)
		}
	}
}

func TestShardKey(t *testing.T) {
	s, err := spec.Load("../examples/tpch/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"customer": "c_custkey", "orders": "o_orderkey", "lineitem": "l_orderkey"}
	for i := range s.Tables {
		if got := shardKey(s, &s.Tables[i]); got != want[s.Tables[i].Name] {
			t.Errorf("shardKey(%s) = %q, want %q", s.Tables[i].Name, got, want[s.Tables[i].Name])
		}
	}
	// No primary key: the first join attribute; public or unjoined: none.
	r := &spec.Spec{
		Tables: []spec.Table{
			{Name: "a", Columns: []spec.Column{{Name: "x", Type: spec.Key}, {Name: "y", Type: spec.Key}, {Name: "z", Type: spec.Key}}},
			{Name: "b", Columns: []spec.Column{{Name: "y", Type: spec.Key}, {Name: "z", Type: spec.Key}}},
			{Name: "p", Public: true, Columns: []spec.Column{{Name: "z", Type: spec.Key}}},
			{Name: "lone", Columns: []spec.Column{{Name: "x", Type: spec.Key}}},
		},
		Join: []spec.JoinEq{
			{Left: spec.ColumnRef{Table: "b", Column: "z"}, Right: spec.ColumnRef{Table: "a", Column: "z"}},
			{Left: spec.ColumnRef{Table: "a", Column: "y"}, Right: spec.ColumnRef{Table: "b", Column: "y"}},
			{Left: spec.ColumnRef{Table: "b", Column: "z"}, Right: spec.ColumnRef{Table: "p", Column: "z"}},
		},
	}
	for i, want := range []string{"y", "y", "", ""} {
		if got := shardKey(r, &r.Tables[i]); got != want {
			t.Errorf("shardKey(%s) = %q, want %q", r.Tables[i].Name, got, want)
		}
	}
}

// TestShardedStatisticsOracle runs the brute-force oracle of the
// statistics (degrees, join sizes, T_E, histograms on ≥ 200 random
// instances; 40 under -short) on the sharded cluster.
func TestShardedStatisticsOracle(t *testing.T) {
	statisticsOracle(t, openClusterTest(t))
}

// TestShardedSameAsDuckDB loads TPC-H-shaped data on embedded DuckDB and
// on the sharded cluster and checks that every statistic the releases use
// is the same on both: degrees of every attribute, the join size, T_E of
// every connected set, and the histograms of every released column and
// pair of released columns. It then checks that the private relations'
// rows live on the shards, every shard holding some and together all, with
// none left on the coordinator, and that the coordinator's plan of a
// join's histogram scans foreign tables.
func TestShardedSameAsDuckDB(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := tpchgen.Generate(ctx, tpchgen.Config{ScaleFactor: 0.002, Seed: 3, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load("../examples/tpch/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Tables {
		s.Tables[i].Source = filepath.Join(dir, s.Tables[i].Name+".csv")
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	engines := []*Engine{openTest(t), openClusterTest(t)}
	var got [2][]string
	for k, e := range engines {
		if err := e.Load(ctx, s); err != nil {
			t.Fatalf("engine %d: %v", k, err)
		}
		got[k] = statisticsText(t, e, h, s)
	}
	if len(got[0]) != len(got[1]) {
		t.Fatalf("DuckDB: %d statistics, cluster %d", len(got[0]), len(got[1]))
	}
	for i := range got[0] {
		if got[0][i] != got[1][i] {
			t.Errorf("statistic %d differs:\nDuckDB:  %.300s\ncluster: %.300s", i, got[0][i], got[1][i])
		}
	}

	// Where the rows are.
	e := engines[1]
	d := e.d.(shardedPostgres)
	for _, tab := range s.Tables {
		var total int64
		if err := e.db.QueryRow("SELECT count(*) FROM " + d.ident(tab.Name)).Scan(&total); err != nil {
			t.Fatal(err)
		}
		var local int64
		if err := e.db.QueryRow("SELECT count(*) FROM ONLY " + d.ident(tab.Name)).Scan(&local); err != nil {
			t.Fatal(err)
		}
		if local != 0 {
			t.Errorf("%s: %d of %d rows on the coordinator", tab.Name, local, total)
		}
		var sum int64
		for _, srv := range d.shards {
			// Count on the shard itself: every remote table of the engine's
			// schema on that shard whose foreign table is a partition of
			// tab.
			var part string
			if err := e.db.QueryRow(`SELECT o.option_value FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_foreign_table f ON f.ftrelid = i.inhrelid
JOIN pg_catalog.pg_foreign_server v ON v.oid = f.ftserver,
LATERAL pg_catalog.pg_options_to_table(f.ftoptions) o
WHERE i.inhparent = to_regclass($1) AND v.srvname = $2 AND o.option_name = 'table_name'`,
				d.ident(d.schema)+"."+d.ident(tab.Name), srv).Scan(&part); err != nil {
				t.Fatalf("%s: the partition on %s: %v", tab.Name, srv, err)
			}
			n, err := d.remoteStrings(ctx, e.db, srv, "SELECT CAST(count(*) AS TEXT) FROM "+d.ident(d.schema)+"."+d.ident(part))
			if err != nil {
				t.Fatal(err)
			}
			var c int64
			fmt.Sscan(n[0], &c)
			if c == 0 {
				t.Errorf("%s: no row on shard %s", tab.Name, srv)
			}
			t.Logf("%s: %d rows on %s", tab.Name, c, srv)
			sum += c
		}
		if sum != total || total == 0 {
			t.Errorf("%s: %d rows on the shards, %d through the coordinator", tab.Name, sum, total)
		}
	}
	// Plans: a group-by on the partition key (lineitem's degrees of
	// l_orderkey) runs entirely on the shards, concurrently; a join on
	// the partition key runs partition by partition, each scanning its
	// shard.
	explain := func(q string) string {
		rows, err := e.db.Query("EXPLAIN VERBOSE " + q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		return strings.Join(plan, "\n")
	}
	p := explain(`SELECT "l_orderkey", count(*) FROM "lineitem" GROUP BY 1`)
	if strings.Count(p, "Async Foreign Scan") != len(d.shards) || !strings.Contains(p, "Remote SQL: SELECT l_orderkey, count(*)") {
		t.Errorf("the degrees of the partition key are not computed on the shards concurrently:\n%s", p)
	}
	p = explain(`SELECT l."l_returnflag", count(*) FROM "orders" o JOIN "lineitem" l ON l."l_orderkey" = o."o_orderkey" GROUP BY 1`)
	if strings.Count(p, "Foreign Scan on") != 2*len(d.shards) || !strings.Contains(p, "Partial") {
		t.Errorf("the join on the partition key does not run partition by partition:\n%s", p)
	}
}

// statisticsText computes every statistic a release over h may ask for,
// each as one line of text, in a fixed order.
func statisticsText(t *testing.T, e *Engine, h *hypergraph.Hypergraph, s *spec.Spec) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	all, err := e.AllDegrees(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, ad := range all {
		dg := slices.Clone(ad.Degrees)
		slices.SortFunc(dg, func(a, b Degree) int {
			return strings.Compare(strings.Join(a.Values, "\x00"), strings.Join(b.Values, "\x00"))
		})
		out = append(out, fmt.Sprintf("degrees %d %s: %v", ad.Relation, ad.Attr, dg))
	}
	n, err := e.JoinSize(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("join size %d", n))
	for set := hypergraph.Set(1); set <= h.All(); set++ {
		if !h.Connected(set) {
			continue
		}
		te, err := e.MaxBoundaryCount(ctx, h, set)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("T_E %v: %d", h.Names(set), te))
	}
	var cols []spec.ColumnRef
	var sizes []int
	for _, ref := range s.Release.Columns {
		for _, tab := range s.Tables {
			for _, c := range tab.Columns {
				if tab.Name == ref.Table && c.Name == ref.Column {
					cols = append(cols, ref)
					sizes = append(sizes, c.Size())
				}
			}
		}
	}
	if len(cols) != len(s.Release.Columns) {
		t.Fatalf("released columns %v: found %v", s.Release.Columns, cols)
	}
	for i := range cols {
		for j := i; j < len(cols); j++ {
			c, z := []spec.ColumnRef{cols[i]}, []int{sizes[i]}
			if j > i {
				c, z = append(c, cols[j]), append(z, sizes[j])
			}
			cells, err := e.Histogram(ctx, h, c, z)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("histogram %v: %v", c, cells))
		}
	}
	cells, err := e.Histogram(ctx, h, cols, sizes)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("histogram %v: %v", cols, cells))
	return out
}

// TestShardedLeftovers checks the life of the remote tables: a load that
// replaces a relation empties its old remote tables when it commits and
// the next load drops them; Close drops the engine's schema on every
// shard; Open drops a crashed engine's schema on the shards and keeps one
// whose lock a live session holds.
func TestShardedLeftovers(t *testing.T) {
	url := clusterURL(t)
	ctx := context.Background()
	e := openClusterTest(t)
	d := e.d.(shardedPostgres)
	// remoteRows maps each remote table of schema on shard srv to its row
	// count.
	remoteRows := func(srv, schema string) map[string]int {
		names, err := d.remoteStrings(ctx, e.db, srv, "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = "+d.str(schema))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, n := range names {
			c, err := d.remoteStrings(ctx, e.db, srv, "SELECT CAST(count(*) AS TEXT) FROM "+d.ident(schema)+"."+d.ident(n))
			if err != nil {
				t.Fatal(err)
			}
			var k int
			fmt.Sscan(c[0], &k)
			out[n] = k
		}
		return out
	}
	dir := t.TempDir()
	var rows [][]string
	for i := range 50 {
		rows = append(rows, []string{fmt.Sprint(i), fmt.Sprint(i % 7)})
	}
	a := writeCSV(t, dir, "a.csv", []string{"k", "j"}, rows)
	b := writeCSV(t, dir, "b.csv", []string{"j"}, [][]string{{"1"}, {"2"}, {"3"}})
	s := &spec.Spec{
		Tables: []spec.Table{
			{Name: "a", Source: a, Columns: []spec.Column{{Name: "k", Type: spec.Key}, {Name: "j", Type: spec.Key}}},
			{Name: "b", Source: b, Columns: []spec.Column{{Name: "j", Type: spec.Key}}},
		},
		Join: []spec.JoinEq{{Left: spec.ColumnRef{Table: "a", Column: "j"}, Right: spec.ColumnRef{Table: "b", Column: "j"}}},
	}
	var before [][]map[string]int
	for load := range 3 {
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		var now []map[string]int
		for k, srv := range d.shards {
			got := remoteRows(srv, d.schema)
			now = append(now, got)
			total := 0
			for _, n := range got {
				total += n
			}
			// Live: a's and b's tables of this load; emptied: the previous
			// load's; the one before was dropped.
			want := 2
			if load > 0 {
				want = 4
			}
			if len(got) != want {
				t.Errorf("load %d, shard %s: %d remote tables %v, want %d", load, srv, len(got), got, want)
			}
			if load > 0 {
				for n := range before[load-1][k] {
					if got[n] != 0 {
						t.Errorf("load %d, shard %s: the replaced table %s still holds %d rows", load, srv, n, got[n])
					}
				}
			}
			if load > 1 {
				for n := range before[load-2][k] {
					if _, ok := got[n]; ok {
						t.Errorf("load %d, shard %s: the table %s of two loads ago is still there", load, srv, n)
					}
				}
			}
		}
		before = append(before, now)
	}
	var n int
	if err := e.db.QueryRow(`SELECT count(*) FROM "a" JOIN "b" ON "a"."j" = "b"."j"`).Scan(&n); err != nil || n != 21 {
		t.Errorf("join after three loads: %d rows, %v; want 21", n, err)
	}

	// A crashed engine's schema on the shards, and one whose lock a live
	// session holds.
	crashed, held := WorkSchemaPrefix+"00000000000000ab", WorkSchemaPrefix+"00000000000000cd"
	for _, srv := range d.shards {
		for _, sch := range []string{crashed, held} {
			if err := d.remote(ctx, e.db, srv, "CREATE SCHEMA "+sch+"; CREATE TABLE "+sch+".private AS SELECT 1 AS x"); err != nil {
				t.Fatal(err)
			}
		}
	}
	lock, err := e.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "SELECT pg_advisory_lock(205)"); err != nil { // 0x…cd
		t.Fatal(err)
	}
	e2, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range d.shards {
		names, err := d.remoteStrings(ctx, e.db, srv, "SELECT nspname FROM pg_catalog.pg_namespace")
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names, crashed) {
			t.Errorf("shard %s: Open left the crashed engine's schema", srv)
		}
		if !slices.Contains(names, held) {
			t.Errorf("shard %s: Open dropped the schema of a live engine", srv)
		}
		if !slices.Contains(names, d.schema) {
			t.Errorf("shard %s: Open dropped the schema of this process's open engine", srv)
		}
	}
	lock.ExecContext(ctx, "SELECT pg_advisory_unlock(205)")
	// Close drops the engine's schema on every shard.
	if err := e2.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	e2s := e2.d.(shardedPostgres).schema
	if err := e2.Close(); err != nil {
		t.Fatal(err)
	}
	for _, srv := range d.shards {
		names, err := d.remoteStrings(ctx, e.db, srv, "SELECT nspname FROM pg_catalog.pg_namespace")
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names, e2s) {
			t.Errorf("shard %s: Close left the engine's schema", srv)
		}
		d.remote(ctx, e.db, srv, "DROP SCHEMA IF EXISTS "+held+" CASCADE")
	}
}

// TestShardedOpenErrors: a URL naming a foreign server the coordinator
// lacks fails Open with an error naming it and the fix.
func TestShardedOpenErrors(t *testing.T) {
	url := clusterURL(t)
	base, _, err := splitShards(url)
	if err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	_, err = Open(context.Background(), base+sep+ShardsParam+"=shard_1,no_such_shard")
	if err == nil || !strings.Contains(err.Error(), `no foreign server "no_such_shard"`) || !strings.Contains(err.Error(), "pg-cluster.sh") {
		t.Errorf("Open with an unknown shard: %v", err)
	}
}
