package release

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

// measureInstance writes a tiny instance and its spec into a temporary
// folder: one private table (seg ∈ {a, b, c}, lvl ∈ 0..3, amount ∈
// [−50, 400], an unreleased measure), or, with join, a customer table
// holding seg joined to orders on the customer key. extra is appended to
// the release section (e.g. measures).
func measureInstance(t *testing.T, join bool, extra string) *spec.Spec {
	t.Helper()
	dir := t.TempDir()
	rnd := rand.New(rand.NewPCG(1, 2))
	segs := []string{"a", "b", "c"}
	var orders, customers strings.Builder
	var y string
	if join {
		customers.WriteString("c_key,seg\n")
		for k := range 2000 {
			fmt.Fprintf(&customers, "%d,%s\n", k, segs[k%3])
		}
		orders.WriteString("o_key,lvl,amount\n")
		for range 6000 {
			fmt.Fprintf(&orders, "%d,%d,%d\n", rnd.IntN(2000), rnd.IntN(4), rnd.IntN(450)-50)
		}
		y = `privacy: {epsilon: 8.0, delta: 1e-6}
tables:
  - name: customer
    source: customer.csv
    columns:
      c_key: {type: key}
      seg: {type: categorical, values: [a, b, c]}
  - name: orders
    source: orders.csv
    columns:
      o_key: {type: key}
      lvl: {type: integer, min: 0, max: 3}
      amount: {type: integer, min: -50, max: 400, bins: 9}
join: ["orders.o_key = customer.c_key"]
`
		if err := os.WriteFile(filepath.Join(dir, "customer.csv"), []byte(customers.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		orders.WriteString("seg,lvl,amount\n")
		for range 3000 {
			fmt.Fprintf(&orders, "%s,%d,%d\n", segs[rnd.IntN(3)], rnd.IntN(4), rnd.IntN(450)-50)
		}
		y = `privacy: {epsilon: 8.0, delta: 1e-6}
tables:
  - name: orders
    source: orders.csv
    columns:
      seg: {type: categorical, values: [a, b, c]}
      lvl: {type: integer, min: 0, max: 3}
      amount: {type: integer, min: -50, max: 400, bins: 9}
`
	}
	if err := os.WriteFile(filepath.Join(dir, "orders.csv"), []byte(orders.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	y += `release:
  method: join-as-one
  columns: [seg, lvl]
` + extra + `workload:
  marginals: [[seg, lvl]]
  numeric: [{sum: amount, where: {seg: [a, b], lvl: [1, 3]}}]
output: {path: out}
`
	p := filepath.Join(dir, "synth.yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return releasetest.LoadSpec(t, p)
}

// TestReleaseMeasureSQL releases a measure and checks, with DuckDB on the
// written file, that SUM(amount) over any set of grid cells is the sum of
// numerical's DP cell sums SUMhat(g) of those cells (cells with synthetic rows), on
// one table and on a two-table join (where the measure reuses
// join-as-one's Δ̃), and that the ledger holds the measures' share.
func TestReleaseMeasureSQL(t *testing.T) {
	for _, join := range []bool{false, true} {
		t.Run(map[bool]string{false: "one table", true: "join"}[join], func(t *testing.T) {
			s := measureInstance(t, join, "  measures: [amount]\n  measures_share: 0.5\n")
			dir := t.TempDir()
			sum := release(t, s, dir, 11)
			if len(sum.Measures) != 1 {
				t.Fatalf("%d measures in the summary, want 1", len(sum.Measures))
			}
			m := sum.Measures[0]
			if m.OutputColumn != "amount" || strings.Join(m.Grid, ",") != "seg,lvl" || len(m.CellSums) != 12 {
				t.Fatalf("measure %+v, want column amount over the grid seg × lvl (12 cells)", m)
			}
			t.Logf("Δ̃ = %v, α̃ = %d, n̂ = %d, lost %v in %d cells; answers %v, rows %v", m.DeltaTilde, m.Alpha, m.NHat, m.LostSum, m.CellsWithoutRows, m.CellSums, m.CellRows)
			nonzero := 0
			for _, a := range m.CellSums {
				if a != 0 {
					nonzero++
				}
			}
			if nonzero < 1 {
				t.Fatalf("%d non-zero cell answers: the SQL check below would be vacuous", nonzero)
			}
			if join && m.DeltaTilde != sum.DeltaTilde {
				t.Errorf("measure Δ̃ = %v, the release's join-as-one Δ̃ = %v", m.DeltaTilde, sum.DeltaTilde)
			}
			if !join && m.DeltaTilde != 1 {
				t.Errorf("one table: measure Δ̃ = %v, want 1", m.DeltaTilde)
			}
			db := releasetest.OpenDuckDB(t)
			path := filepath.Join(dir, layout.ParquetName)
			var typ string
			if err := db.QueryRow("SELECT typeof(amount) FROM read_parquet(?) LIMIT 1", path).Scan(&typ); err != nil {
				t.Fatal(err)
			}
			if typ != "DOUBLE" {
				t.Errorf("amount is %s, want DOUBLE", typ)
			}
			// Per cell: rows and SUM against the summary.
			segs := []string{"a", "b", "c"}
			var want, total float64
			for si, sg := range segs {
				for lvl := range 4 {
					g := si*4 + lvl
					var n int64
					var got float64
					if err := db.QueryRow("SELECT count(*), COALESCE(SUM(amount), 0) FROM read_parquet(?) WHERE seg = ? AND lvl = ?", path, sg, lvl).Scan(&n, &got); err != nil {
						t.Fatal(err)
					}
					if n != m.CellRows[g] {
						t.Errorf("cell (%s, %d): %d rows in the file, summary %d", sg, lvl, n, m.CellRows[g])
					}
					exp := m.CellSums[g]
					if n == 0 {
						exp = 0
					}
					if math.Abs(got-exp) > 1e-6*math.Max(1, math.Abs(exp)) {
						t.Errorf("cell (%s, %d): SQL SUM = %v, SUMhat %v", sg, lvl, got, exp)
					}
					total += exp
					if sg != "c" && lvl >= 1 {
						want += exp
					}
				}
			}
			var got float64
			if err := db.QueryRow("SELECT SUM(amount) FROM read_parquet(?) WHERE seg IN ('a', 'b') AND lvl BETWEEN 1 AND 3", path).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Errorf("workload box: SQL SUM = %v, sum of numerical's cell answers %v", got, want)
			}
			// The summary's example queries run as they are and the sum is
			// the workload box's.
			countSQL, sumSQL := ExampleSQL(s, path)
			var exSum float64
			if err := db.QueryRow(sumSQL).Scan(&exSum); err != nil {
				t.Fatalf("%s: %v", sumSQL, err)
			}
			if math.Abs(exSum-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Errorf("%s = %v, want %v", sumSQL, exSum, want)
			}
			if r, err := db.Query(countSQL); err != nil {
				t.Errorf("%s: %v", countSQL, err)
			} else {
				r.Close()
			}
			var all float64
			if err := db.QueryRow("SELECT SUM(amount) FROM read_parquet(?)", path).Scan(&all); err != nil {
				t.Fatal(err)
			}
			var cellsum float64
			for _, a := range m.CellSums {
				cellsum += a
			}
			if math.Abs(all-(cellsum-m.LostSum)) > 1e-6*math.Max(1, math.Abs(all)) || math.Abs(all-total) > 1e-6*math.Max(1, math.Abs(all)) {
				t.Errorf("SUM over the file %v, Σ answers %v − lost %v", all, cellsum, m.LostSum)
			}
			// Ledger: (share·ε, 0) for the measures, the rest for join-as-one.
			var measuresEps, joinEps float64
			for _, sp := range sum.Privacy.Spends {
				switch {
				case strings.HasPrefix(sp.Mechanism, "measures"):
					measuresEps = sp.Epsilon
					// One measure: its direct total, its atoms' sums, and
					// numerical's mechanism of three parts.
					if sp.Delta != 0 || len(sp.Parts) != 1 || len(sp.Parts[0].Parts) != 3 || len(sp.Parts[0].Parts[2].Parts) != 3 {
						t.Fatalf("measures spend %+v, want δ = 0 and one measure of three parts, the last of three", sp)
					}
					d := sp.Parts[0].Parts[2].Details
					for _, k := range []string{"thresholds_epsilon", "alpha_epsilon", "group_factor"} {
						if _, ok := d[k]; !ok {
							t.Errorf("the measure's ledger entry lacks %q: %v", k, d)
						}
					}
				case sp.Mechanism == "join-as-one":
					joinEps = sp.Epsilon
				}
			}
			if math.Abs(measuresEps-4) > 1e-12 || math.Abs(joinEps-4) > 1e-12 {
				t.Errorf("measures ε = %v, join-as-one ε = %v; want 4 and 4", measuresEps, joinEps)
			}
			if math.Abs(sum.Privacy.Spent.Epsilon-8) > 1e-9 {
				t.Errorf("spent ε = %v, want 8", sum.Privacy.Spent.Epsilon)
			}
		})
	}
}

// TestReleaseNoMeasureUnchanged checks that without measures the file has
// the released columns only and the ledger one join-as-one spend of the
// whole budget, as before measures existed.
func TestReleaseNoMeasureUnchanged(t *testing.T) {
	s := measureInstance(t, false, "")
	// The workload's sum of the unreleased amount is refused without a
	// measure, as before.
	if _, err := workload.Families(s); err == nil {
		t.Fatal("a sum of an unreleased column without measures was accepted")
	}
	s.Workload.Numeric = nil
	dir := t.TempDir()
	sum := release(t, s, dir, 11)
	if sum.Measures != nil {
		t.Fatalf("measures %+v without release.measures", sum.Measures)
	}
	if len(sum.Privacy.Spends) != 1 || sum.Privacy.Spends[0].Mechanism != "join-as-one" || sum.Privacy.Spends[0].Epsilon != 8 {
		t.Fatalf("spends %+v, want one join-as-one spend of ε = 8", sum.Privacy.Spends)
	}
	if _, ok := sum.Privacy.Parameters["measures"]; ok {
		t.Error("report parameters hold measures")
	}
	db := releasetest.OpenDuckDB(t)
	rows, err := db.Query("SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet(?))", filepath.Join(dir, layout.ParquetName))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if strings.Join(cols, ",") != "seg,lvl" {
		t.Errorf("columns %v, want seg,lvl", cols)
	}
}

// TestReleaseMeasureOneCell releases a measure no workload sum conditions
// (one cell: the file's SUM is the total) that is also a released column
// (its measure column is then named table_column).
func TestReleaseMeasureOneCell(t *testing.T) {
	s := measureInstance(t, false, "  measures: [lvl]\n")
	s.Workload.Numeric = nil // the instance's sum of the unreleased amount
	dir := t.TempDir()
	sum := release(t, s, dir, 5)
	m := sum.Measures[0]
	if m.OutputColumn != "orders_lvl" || m.Grid != nil || len(m.CellSums) != 1 || m.CellRows[0] != sum.Rows {
		t.Fatalf("measure %+v (rows %d), want orders_lvl over one cell holding every row", m, sum.Rows)
	}
	var got float64
	if err := releasetest.OpenDuckDB(t).QueryRow("SELECT SUM(orders_lvl) FROM read_parquet(?)", filepath.Join(dir, layout.ParquetName)).Scan(&got); err != nil {
		t.Fatal(err)
	}
	// The true total of lvl over 3000 rows uniform on 0..3 is about 4500.
	if math.Abs(got-m.CellSums[0]) > 1e-6*math.Abs(got) || m.CellSums[0] < 3000 || m.CellSums[0] > 6000 {
		t.Errorf("SUM(orders_lvl) = %v, SUMhat = %v (true total about 4500)", got, m.CellSums[0])
	}
}

// TestReleaseMeasureUniformizedRefused checks that measures with the
// uniformized method are refused before any output or data.
func TestReleaseMeasureUniformizedRefused(t *testing.T) {
	s := measureInstance(t, true, "  measures: [amount]\n")
	s.Release.Method = spec.Uniformized
	dir := filepath.Join(t.TempDir(), "out")
	_, err := Run(context.Background(), Options{Spec: s, OutDir: dir, Engine: "duckdb", Source: dp.NewSeededSource(1)})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "measures") {
		t.Fatalf("error %v, want ErrUnsupported naming the measures", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("output folder exists after the refusal: %v", err)
	}
}
