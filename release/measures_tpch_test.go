package release

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
)

// tpchMeasureBoxes are the workload.numeric sums of l_quantity of
// examples/tpch/measures.yaml, in its order, as SQL conditions on the
// released columns (valid on the file and on the join of the CSV files).
var tpchMeasureBoxes = []string{
	"",
	"c_mktsegment = 'BUILDING'",
	"c_mktsegment IN ('AUTOMOBILE', 'MACHINERY')",
	"o_orderpriority IN ('1-URGENT', '2-HIGH')",
	"c_mktsegment = 'HOUSEHOLD' AND o_orderpriority = '5-LOW'",
	"c_mktsegment IN ('FURNITURE', 'HOUSEHOLD') AND o_orderpriority IN ('3-MEDIUM', '4-NOT SPECIFIED')",
	"o_orderpriority = '5-LOW'",
}

// TestReleaseMeasureTPCHUnit is the accuracy check of
// examples/tpch/measures.yaml: TPC-H SF 0.01 under privacy unit customer,
// l_quantity as a measure over segment × priority, ε = 1 (0.6 of it to the
// measure; SYNTH_MEASURE_TPCH_SPEC and SYNTH_MEASURE_TPCH_COLUMN run
// another spec with the same boxes, e.g. o_totalprice). For every seed it compares the file's SUM(l_quantity) over
// each workload box (DuckDB on the Parquet file) with the truth over the
// join of the CSV files. It asserts that the whole-file SUM is within 5%
// and the boxes' median relative error below 0.15 on one seeded run (the
// default; deterministic), and logs the table of docs/measures.md; with
// SYNTH_MEASURE_TPCH_RUNS=10 (seeds 1–10) it asserts the target
// for the whole-file SUM, within 2% in 9 of 10, and the 0.05 for
// the boxes' median relative error (measured 0.029). Skipped under -short.
func TestReleaseMeasureTPCHUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("TPC-H releases take seconds")
	}
	runs := 1
	if v := os.Getenv("SYNTH_MEASURE_TPCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SYNTH_MEASURE_TPCH_RUNS=%q", v)
		}
		runs = n
	}
	specPath, col := filepath.Join("..", "examples", "tpch", "measures.yaml"), "l_quantity"
	if v := os.Getenv("SYNTH_MEASURE_TPCH_SPEC"); v != "" {
		// e.g. ../testdata/tpch/measures_totalprice.yaml with
		// SYNTH_MEASURE_TPCH_COLUMN=o_totalprice: the same boxes.
		specPath, col = v, os.Getenv("SYNTH_MEASURE_TPCH_COLUMN")
	}
	s := releasetest.LoadSpec(t, specPath)
	db := releasetest.OpenDuckDB(t)
	csv := func(name string) string {
		p, err := filepath.Abs(filepath.Join("..", "testdata", "tpch", name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		return "read_csv_auto(" + releasetest.SQLString(p) + ", header = true)"
	}
	join := " FROM " + csv("lineitem") + " AS l JOIN " + csv("orders") + " AS o ON l.l_orderkey = o.o_orderkey JOIN " +
		csv("customer") + " AS c ON o.o_custkey = c.c_custkey"
	where := func(w string) string {
		if w == "" {
			return ""
		}
		return " WHERE " + w
	}
	truth := make([]float64, len(tpchMeasureBoxes))
	for i, w := range tpchMeasureBoxes {
		if err := db.QueryRow("SELECT CAST(SUM(" + col + ") AS DOUBLE)" + join + where(w)).Scan(&truth[i]); err != nil {
			t.Fatal(err)
		}
	}
	var rel, totalRel []float64
	perBox := make([][]float64, len(tpchMeasureBoxes))
	for run := 1; run <= runs; run++ {
		dir := t.TempDir()
		sum := release(t, s, dir, uint64(run))
		m := sum.Measures[0]
		path := releasetest.SQLString(filepath.Join(dir, layout.ParquetName))
		for i, w := range tpchMeasureBoxes {
			var got float64
			if err := db.QueryRow("SELECT COALESCE(SUM(" + col + "), 0) FROM read_parquet(" + path + ")" + where(w)).Scan(&got); err != nil {
				t.Fatal(err)
			}
			r := math.Abs(got-truth[i]) / truth[i]
			rel = append(rel, r)
			perBox[i] = append(perBox[i], r)
			if i == 0 {
				totalRel = append(totalRel, (got-truth[i])/truth[i])
			}
		}
		t.Logf("run %d: clip %.0f, rows %d, whole-file SUM %+.4f, total 95%% noise ±%.0f (%.2f%%), atom scale %.0f", run, m.ErrorScale.UnitClip, sum.Rows,
			totalRel[len(totalRel)-1], m.ErrorScale.TotalNoise95, 100*m.ErrorScale.TotalNoise95/truth[0], m.ErrorScale.AtomNoiseScale)
	}
	within := 0
	for _, r := range totalRel {
		if math.Abs(r) <= 0.02 {
			within++
		}
	}
	var b strings.Builder
	for i, w := range tpchMeasureBoxes {
		if w == "" {
			w = "(all rows)"
		}
		b.WriteString("\n| " + w + " | " + strconv.FormatFloat(truth[i], 'f', 0, 64) + " | " + strconv.FormatFloat(medianOf(perBox[i]), 'f', 4, 64) +
			" | " + strconv.FormatFloat(quantile(perBox[i], 1), 'f', 4, 64) + " |")
	}
	t.Logf("| box | true SUM(%s) | median relative error | max |%s", col, b.String())
	t.Logf("whole-file SUM: relative errors %.4f; within 2%% in %d of %d runs; workload boxes' median relative error %.4f", totalRel, within, len(totalRel), medianOf(rel))
	if runs >= 10 {
		if 10*within < 9*len(totalRel) {
			t.Errorf("whole-file SUM within 2%% in %d of %d runs, want 9 in 10", within, len(totalRel))
		}
		// Measured over seeds 1–10: 0.029 (docs/measures.md; 0.057 before
		// the atoms got their own clip).
		if mr := medianOf(rel); mr > 0.05 {
			t.Errorf("median relative error of the workload's boxes %.4f > 0.05 (issue 38)", mr)
		}
		return
	}
	if r := math.Abs(totalRel[0]); r > 0.05 {
		t.Errorf("whole-file SUM off by %.4f, want ≤ 0.05", r)
	}
	if mr := medianOf(rel); mr > 0.15 {
		t.Errorf("median relative error of the workload's boxes %.4f > 0.15", mr)
	}
}
