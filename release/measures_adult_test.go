package release

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/numerical"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
)

// adultBox is one workload.numeric sum of capital-loss in
// examples/adult/measures.yaml: conditions on age (an interval on the
// example's bin edges, so that the file's bins answer it exactly) and
// education ("" for none).
type adultBox struct{ age, edu string }

// adultMeasureQueries are the example's boxes, in its workload's order.
var adultMeasureQueries = []adultBox{
	{"", ""},
	{"[30, 49]", "[Bachelors, Masters]"},
	{"[17, 29]", ""},
	{"[40, 64]", "[HS-grad]"},
	{"", "[Doctorate, Prof-school]"},
	{"[50, 90]", ""},
	{"[25, 39]", "[Some-college, Assoc-voc, Assoc-acdm]"},
}

func (q adultBox) ages() (lo, hi int64, ok bool) {
	if q.age == "" {
		return 0, 0, false
	}
	p := strings.Split(strings.Trim(q.age, "[]"), ",")
	l, _ := strconv.ParseInt(strings.TrimSpace(p[0]), 10, 64)
	h, _ := strconv.ParseInt(strings.TrimSpace(p[1]), 10, 64)
	return l, h, true
}

func (q adultBox) edus() []string {
	if q.edu == "" {
		return nil
	}
	var out []string
	for _, v := range strings.Split(strings.Trim(q.edu, "[]"), ",") {
		out = append(out, strings.TrimSpace(v))
	}
	return out
}

// sql is the box's WHERE clause ("" for none).
func (q adultBox) sql() string {
	var w []string
	if lo, hi, ok := q.ages(); ok {
		w = append(w, fmt.Sprintf("age BETWEEN %d AND %d", lo, hi))
	}
	if es := q.edus(); es != nil {
		var vs []string
		for _, v := range es {
			vs = append(vs, "'"+v+"'")
		}
		w = append(w, "education IN ("+strings.Join(vs, ", ")+")")
	}
	if len(w) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w, " AND ")
}

// where is the box as a numerical query over the grid.
func (q adultBox) where(edu []string) numerical.Query {
	w := make([][]int, 2)
	for c := range 128 {
		if q.has(c, edu) {
			if !slices.Contains(w[0], c/16) {
				w[0] = append(w[0], c/16)
			}
			if !slices.Contains(w[1], c%16) {
				w[1] = append(w[1], c%16)
			}
		}
	}
	return numerical.Query{Where: w}
}

// has reports whether grid cell c (age bin × education, 8 × 16) lies in
// the box.
func (q adultBox) has(c int, edu []string) bool {
	lowEdges := []int64{17, 20, 25, 30, 35, 40, 50, 65}
	if lo, hi, ok := q.ages(); ok {
		a := lowEdges[c/16]
		if a < lo || a > hi {
			return false
		}
	}
	if es := q.edus(); es != nil && !slices.Contains(es, edu[c%16]) {
		return false
	}
	return true
}

// TestReleaseMeasureAdult is the accuracy check of examples/adult/
// measures.yaml (Adult, 32,561 rows, one table: Δ̃ = 1; capital-loss over
// the grid age × education, 128 cells; ε = 1 with release.measures_share
// 0.6, so ε_m = 0.6 for the measure; δ = 10⁻⁶ for the rows, 0 for the
// measure), in the manner of Qiu et al. §6: the boxes are every interval
// of age bins × one or two adjacent education levels (36 × 31 = 1,116
// boxes), answered by the file (the sum of its DP cell sums over the box,
// checked against DuckDB's SUM on the file for the workload's boxes).
// Baselines on the same boxes, the same grid and the same seeds:
// composition (numerical.Composition, R2T per box, ε/1,116 each) at the
// whole ε = 1 and at ε_m, and answering 0. It asserts that the file's
// median absolute error over all boxes and runs is below composition's at
// ε = 1 — measured over seeds 1–10: 24,153 against 39,340 (the seeded runs
// make the test deterministic) — and that the file's workload boxes
// (measured directly through their atoms) have a median relative error
// below 0.1; with 10 runs or more (SYNTH_MEASURE_ADULT_RUNS=10, the table of
// docs/measures.md), below 0.05, and the whole-file SUM (the directly
// measured total) within 2% of the truth in 9 runs of 10. It logs the table
// of docs/measures.md and the mean TVD of the release's count marginals
// (the price of the measures' share). Skipped under -short (a release
// takes seconds).
func TestReleaseMeasureAdult(t *testing.T) {
	if testing.Short() {
		t.Skip("Adult releases take seconds")
	}
	// One seeded run by default (the assertions hold on it: see below);
	// SYNTH_SLOW_AUDITS (.ci/run) runs the three of the table as before.
	runs := 1
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		runs = 3
	}
	if v := os.Getenv("SYNTH_MEASURE_ADULT_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SYNTH_MEASURE_ADULT_RUNS=%q", v)
		}
		runs = n
	}
	specPath := filepath.Join("..", "examples", "adult", "measures.yaml")
	if v := os.Getenv("SYNTH_MEASURE_ADULT_SPEC"); v != "" {
		specPath = v // e.g. ../testdata/adult/issue38_measures.yaml, the shape
	}
	s := releasetest.LoadSpec(t, specPath)
	if v := os.Getenv("SYNTH_MEASURE_ADULT_SHARE"); v != "" {
		share, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("SYNTH_MEASURE_ADULT_SHARE=%q", v)
		}
		s.Release.MeasuresShare = share
	}
	epsM := s.Privacy.Epsilon * s.Release.MeasuresShare
	edges := []int64{17, 20, 25, 30, 35, 40, 50, 65, 91}
	edu := s.Column(spec.ColumnRef{Table: "adult", Column: "education"}).Values
	if len(edu) != 16 {
		t.Fatalf("education has %d values, want 16", len(edu))
	}
	// The true points (cell, value, count) from the CSV.
	db := releasetest.OpenDuckDB(t)
	csv, err := filepath.Abs(filepath.Join("..", "testdata", "adult", "adult_train.csv"))
	if err != nil {
		t.Fatal(err)
	}
	grid := numerical.Grid{Names: []string{"age", "education"}, Sizes: []int{8, 16}}
	u, err := numerical.NewUniverse(grid, numerical.Measure{Name: "capital-loss", Min: 0, Max: 4356}, numerical.UniverseOptions{MemoryCap: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT age, education, "capital-loss", count(*) FROM read_csv_auto(` + releasetest.SQLString(csv) + `, header = true) GROUP BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	var pts []numerical.Point
	cellTruth := make([]float64, 128)
	for rows.Next() {
		var age, v, n int64
		var e string
		if err := rows.Scan(&age, &e, &v, &n); err != nil {
			t.Fatal(err)
		}
		a := sort.Search(len(edges)-1, func(i int) bool { return edges[i+1] > age })
		c := grid.Cell(min(a, 7), slices.Index(edu, e))
		pts = append(pts, numerical.Point{Cell: c, Units: v, Count: n})
		cellTruth[c] += float64(v * n)
	}
	rows.Close()
	// The boxes.
	var boxes []numerical.Query
	for lo := range 8 {
		for hi := lo; hi < 8; hi++ {
			var ages []int
			for x := lo; x <= hi; x++ {
				ages = append(ages, x)
			}
			for e := range 16 {
				boxes = append(boxes, numerical.Query{Where: [][]int{ages, {e}}})
				if e < 15 {
					boxes = append(boxes, numerical.Query{Where: [][]int{ages, {e, e + 1}}})
				}
			}
		}
	}
	inBox := func(q numerical.Query, c int) bool {
		return slices.Contains(q.Where[0], c/16) && slices.Contains(q.Where[1], c%16)
	}
	boxSum := func(q numerical.Query, cells []float64) float64 {
		var x float64
		for c, v := range cells {
			if inBox(q, c) {
				x += v
			}
		}
		return x
	}
	truth := make([]float64, len(boxes))
	for i, q := range boxes {
		truth[i] = boxSum(q, cellTruth)
	}
	var fileErr, comp1, compM, zero []float64
	var covered, wlRel, wlAbs, wlComp, totalRel, tvd []float64
	var wlBoxes []numerical.Query
	wlTruth := make([]float64, len(adultMeasureQueries))
	for i, q := range adultMeasureQueries {
		wlBoxes = append(wlBoxes, q.where(edu))
		for c, v := range cellTruth {
			if q.has(c, edu) {
				wlTruth[i] += v
			}
		}
	}
	for run := 1; run <= runs; run++ {
		dir := t.TempDir()
		sum := release(t, s, dir, uint64(run))
		// The count marginals' price: the rows get (1 − share)·ε.
		tvd = append(tvd, scoreFile(t, s, sum.Parquet, layout.ColumnNames(s)).MeanTVD)
		m := sum.Measures[0]
		file := make([]float64, len(m.CellSums))
		for c, v := range m.CellSums {
			if m.CellRows[c] > 0 {
				file[c] = v // a cell without rows carries nothing
			}
		}
		for i, q := range boxes {
			e := math.Abs(boxSum(q, file) - truth[i])
			fileErr = append(fileErr, e)
			zero = append(zero, math.Abs(truth[i]))
			covered = append(covered, map[bool]float64{true: 1}[e <= m.ErrorScale.Noise95])
		}
		// The workload's boxes: DuckDB's SUM on the file equals the sum of
		// the file's cell sums, and PMW keeps them accurate.
		path := filepath.Join(dir, layout.ParquetName)
		for i, q := range adultMeasureQueries {
			var got, want float64
			if err := db.QueryRow(`SELECT COALESCE(SUM("capital-loss"), 0) FROM read_parquet(` + releasetest.SQLString(path) + `)` + q.sql()).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRow(`SELECT COALESCE(SUM("capital-loss"), 0) FROM read_csv_auto(` + releasetest.SQLString(csv) + `, header = true)` + q.sql()).Scan(&want); err != nil {
				t.Fatal(err)
			}
			var fromCells float64
			for c, v := range file {
				if q.has(c, edu) {
					fromCells += v
				}
			}
			if math.Abs(got-fromCells) > 1e-6*math.Max(1, math.Abs(got)) {
				t.Errorf("run %d, box %d: the file's SQL SUM %v, its cell sums %v", run, i, got, fromCells)
			}
			if math.Abs(want-wlTruth[i]) > 1e-6*math.Max(1, want) {
				t.Fatalf("box %d: true sum %v by SQL, %v by the cells", i, want, wlTruth[i])
			}
			wlRel = append(wlRel, math.Abs(got-want)/math.Max(want, 1))
			wlAbs = append(wlAbs, math.Abs(got-want))
			if i == 0 {
				totalRel = append(totalRel, (got-want)/want)
			}
		}
		for _, c := range []struct {
			eps  float64
			errs *[]float64
		}{{s.Privacy.Epsilon, &comp1}, {epsM, &compM}} {
			res, err := numerical.Composition(context.Background(), dp.NewSeededSource(uint64(run)), u, boxes, pts, numerical.Config{Epsilon: c.eps})
			if err != nil {
				t.Fatal(err)
			}
			for i := range boxes {
				*c.errs = append(*c.errs, math.Abs(res.Answers[i]-truth[i]))
			}
		}
		res, err := numerical.Composition(context.Background(), dp.NewSeededSource(uint64(run)), u, wlBoxes, pts, numerical.Config{Epsilon: s.Privacy.Epsilon})
		if err != nil {
			t.Fatal(err)
		}
		for i := range wlBoxes {
			wlComp = append(wlComp, math.Abs(res.Answers[i]-wlTruth[i]))
		}
		t.Logf("run %d: α̃ = %d, n̂ = %d, %s; error scale: noise %.0f, 95%% ±%.0f, DP total %.0f (true %.0f)", run, m.Alpha, m.NHat,
			m.Universe, m.ErrorScale.NoiseScale, m.ErrorScale.Noise95, m.ErrorScale.DPTotal, mean(cellTruth)*float64(len(cellTruth)))
	}
	t.Logf("| mechanism | ε for the sums | median | 75%% | 90%% | max |")
	for _, r := range []struct {
		name string
		eps  float64
		errs []float64
	}{
		{"release file (examples/adult/measures.yaml)", epsM, fileErr},
		{"composition (R2T per box)", s.Privacy.Epsilon, comp1},
		{"composition (R2T per box)", epsM, compM},
		{"answer 0", 0, zero},
		{"release file, the workload's 7 boxes only", epsM, wlAbs},
		{"composition on the workload's 7 boxes only", s.Privacy.Epsilon, wlComp},
	} {
		t.Logf("| %s | %g | %.0f | %.0f | %.0f | %.0f |", r.name, r.eps, quantile(r.errs, 0.5), quantile(r.errs, 0.75), quantile(r.errs, 0.9), quantile(r.errs, 1))
	}
	var wins float64
	for i := range fileErr {
		if fileErr[i] < comp1[i] {
			wins++
		}
	}
	t.Logf("%d boxes × %d runs: the file beats composition at ε = 1 in %.1f%% of them; |error| ≤ the published 95%% noise in %.1f%%; workload boxes' median relative error %.3f",
		len(boxes), runs, 100*wins/float64(len(fileErr)), 100*mean(covered), medianOf(wlRel))
	within := 0
	for _, r := range totalRel {
		if math.Abs(r) <= 0.02 {
			within++
		}
	}
	t.Logf("whole-file SUM: relative errors %.4f; within 2%% in %d of %d runs", totalRel, within, len(totalRel))
	t.Logf("measures share %g: the workload's count marginals' mean TVD %.5f over %d runs (%.5f … %.5f)",
		s.Release.MeasuresShare, mean(tvd), len(tvd), quantile(tvd, 0), quantile(tvd, 1))
	if !(quantile(fileErr, 0.5) < quantile(comp1, 0.5)) {
		t.Errorf("median |error| of the file %.0f, composition at ε = 1 %.0f: the file must be below", quantile(fileErr, 0.5), quantile(comp1, 0.5))
	}
	if !(quantile(fileErr, 0.5) < 0.75*quantile(zero, 0.5)) {
		t.Errorf("median |error| of the file %.0f, answering 0 %.0f: the file must be well below", quantile(fileErr, 0.5), quantile(zero, 0.5))
	}
	limit := 0.1
	if runs >= 10 {
		limit = 0.05
		if 10*within < 9*len(totalRel) {
			t.Errorf("whole-file SUM within 2%% in %d of %d runs, want 9 in 10", within, len(totalRel))
		}
	}
	if mr := medianOf(wlRel); mr > limit {
		t.Errorf("median relative error of the workload's boxes %.3f > %v", mr, limit)
	}
}

// quantile is the p-quantile of xs (linear interpolation).
func quantile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	x := p * float64(len(s)-1)
	lo := int(math.Floor(x))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (x-float64(lo))*(s[hi]-s[lo])
}

// medianOf is the median (mean of the middle two for an even count).
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
