package release

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/spec"
)

// The small-data suite (issue 40; testdata/*/small, built by
// internal/smalldata): an example's spec read with its sources swapped for
// a subsample. "adult@500" is examples/adult/synth.yaml over
// testdata/adult/small/adult_500.csv (likewise bank@N for N in 500, 2000,
// 5000); "retail@100" is examples/retail/synth.yaml over
// testdata/retail/small (100 customers, unit customer). The spec is parsed
// from the rewritten text, so its digest (the scorer's cache key) differs
// from the full example's.
func smallSpec(t testing.TB, name string) *spec.Spec {
	t.Helper()
	base, n, ok := strings.Cut(name, "@")
	if !ok {
		t.Fatalf("small-data name %q: want BASE@N", name)
	}
	file := filepath.Join("..", "examples", base, "synth.yaml")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	var from, to string
	switch base {
	case "adult":
		from, to = "testdata/adult/adult_train.csv", "testdata/adult/small/adult_"+n+".csv"
	case "bank":
		from, to = "testdata/bank/bank-full.csv", "testdata/bank/small/bank_"+n+".csv"
	case "retail":
		if n != "100" {
			t.Fatalf("small-data name %q: retail has only @100", name)
		}
		from, to = "testdata/retail/", "testdata/retail/small/"
	default:
		t.Fatalf("small-data name %q: no subsample of %s", name, base)
	}
	if !strings.Contains(text, from) {
		t.Fatalf("%s does not read %s", file, from)
	}
	s, err := spec.Parse([]byte(strings.ReplaceAll(text, from, to)), file)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// smallNames is the small-data suite in the table's order.
var smallNames = []string{
	"adult@500", "adult@2000", "adult@5000",
	"bank@500", "bank@2000", "bank@5000",
	"retail@100", "retail@100" + tupleLevel,
}

// TestSmallDataSpecs: every spec of the suite loads and reads a subsample
// with the row count the generator promises (the scorer's true join).
func TestSmallDataSpecs(t *testing.T) {
	want := map[string]int{"adult@500": 500, "adult@2000": 2000, "adult@5000": 5000,
		"bank@500": 500, "bank@2000": 2000, "bank@5000": 5000, "retail@100": 7137}
	for name, n := range want {
		s := smallSpec(t, name)
		tr, err := score.Truth(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Rows) != n {
			t.Errorf("%s: %d true rows, want %d", name, len(tr.Rows), n)
		}
	}
}

// TestSmallDataTable prints the small-data table of issue 40: for every
// data set of the suite and ε ∈ {0.5, 1, 4} (SYNTH_SMALL_EPS overrides,
// comma-separated), the mean TVD of the workload marginals over
// SYNTH_SMALL_SEEDS seeds (default 5) with its standard deviation, rows /
// true, the uniform distribution's TVD and, for each folder of
// SYNTH_PEER_DIRS (comma-separated; files {name}_eps{ε}_seed{s}.csv with
// the released columns' names), the peer's mean TVD over the files present.
// SYNTH_SMALL_DATA picks data sets (comma-separated names);
// SYNTH_SMALL_BOUND sets the unit releases' release.contribution_bound (a
// number or auto). It runs only
// when SYNTH_SMALL_TABLE is set (make accuracy-small).
//
// With SYNTH_PEER_EXPORT=DIR it first writes, for every data set, what a
// peer needs to run on the same domains and workload: {name}.csv (the true
// rows as bin indices, the columns named as released; with a privacy
// unit a last column _unit holds the unit's key) and {name}.json (each
// column's size and, for each bin, a raw value that bins to it, the
// workload's marginals, δ). Those files hold private data: they are for
// the peers' runs, outside the repository.
func TestSmallDataTable(t *testing.T) {
	if os.Getenv("SYNTH_SMALL_TABLE") == "" {
		t.Skip("set SYNTH_SMALL_TABLE=1 to print the small-data table (make accuracy-small)")
	}
	names := smallNames
	if v := os.Getenv("SYNTH_SMALL_DATA"); v != "" {
		names = strings.Split(v, ",")
	}
	epsilons := []float64{0.5, 1, 4}
	if v := os.Getenv("SYNTH_SMALL_EPS"); v != "" {
		epsilons = nil
		for _, f := range strings.Split(v, ",") {
			e, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatal(err)
			}
			epsilons = append(epsilons, e)
		}
	}
	seeds := 5
	if v := os.Getenv("SYNTH_SMALL_SEEDS"); v != "" {
		var err error
		if seeds, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	if dir := os.Getenv("SYNTH_PEER_EXPORT"); dir != "" {
		for _, name := range names {
			if !strings.HasSuffix(name, tupleLevel) {
				exportForPeer(t, dir, name)
			}
		}
	}
	var peers []string
	if v := os.Getenv("SYNTH_PEER_DIRS"); v != "" {
		peers = strings.Split(v, ",")
	}
	var out strings.Builder
	out.WriteString("| data | ε | synth TVD (mean ± sd) | rows / true | uniform TVD |")
	for _, p := range peers {
		fmt.Fprintf(&out, " %s |", filepath.Base(p))
	}
	out.WriteString("\n| --- | --- | --- | --- | --- |" + strings.Repeat(" --- |", len(peers)) + "\n")
	for _, name := range names {
		for _, eps := range epsilons {
			var tvds []float64
			var uni, ratio float64
			start := time.Now()
			for seed := 1; seed <= seeds; seed++ {
				r := smallRelease(t, name, eps, dp.NewSeededSource(uint64(seed)))
				tvds = append(tvds, r.MeanTVD)
				uni = r.MeanUniformTVD
				ratio += float64(r.Rows) / float64(r.TrueRows) / float64(seeds)
			}
			m, sd := meanSD(tvds)
			fmt.Fprintf(&out, "| %s | %g | %.4f ± %.4f | %.2f | %.3f |", name, eps, m, sd, ratio, uni)
			for _, p := range peers {
				var pt []float64
				for seed := 1; seed <= 5; seed++ {
					f := filepath.Join(p, fmt.Sprintf("%s_eps%g_seed%d.csv", name, eps, seed))
					if _, err := os.Stat(f); err != nil {
						continue
					}
					s := smallSpec(t, strings.TrimSuffix(name, tupleLevel))
					var cols []string
					for _, c := range s.Release.Columns {
						cols = append(cols, c.Column)
					}
					pt = append(pt, scoreFile(t, s, f, cols).MeanTVD)
				}
				if len(pt) == 0 {
					out.WriteString(" – |")
					continue
				}
				pm, psd := meanSD(pt)
				fmt.Fprintf(&out, " %.4f ± %.4f (%d) |", pm, psd, len(pt))
			}
			out.WriteString("\n")
			t.Logf("%s ε=%g: TVD %.4f ± %.4f (uniform %.3f), rows/true %.2f, %v", name, eps, m, sd, uni, ratio, time.Since(start).Round(time.Millisecond))
		}
	}
	fmt.Println(out.String())
}

// smallRelease runs one release of the small-data set name at ε and scores
// it with the independent scorer.
func smallRelease(t testing.TB, name string, eps float64, src dp.Source) score.Result {
	t.Helper()
	base, tuple := strings.CutSuffix(name, tupleLevel)
	s := smallSpec(t, base)
	if tuple {
		s.Privacy.Unit, s.Release.Method = "", spec.JoinAsOne
	}
	s.Privacy.Epsilon = eps
	if v := os.Getenv("SYNTH_SMALL_BOUND"); v == "auto" {
		s.Release.ContributionBoundAuto = true
	} else if v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("SYNTH_SMALL_BOUND=%q: want a number or auto", v)
		}
		s.Release.ContributionBound = r
	}
	sum, err := Run(context.Background(), Options{Spec: s, OutDir: t.TempDir(), Engine: "duckdb", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range s.Release.Columns {
		names = append(names, c.Column)
	}
	return scoreFile(t, s, sum.Parquet, names)
}

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v / float64(len(x))
	}
	if len(x) < 2 {
		return mean, 0
	}
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)-1))
}

// peerDomain is the {name}.json a peer reads (see TestSmallDataTable).
type peerDomain struct {
	Columns   []string            `json:"columns"`
	Sizes     []int               `json:"sizes"`
	Values    map[string][]string `json:"values"`
	Marginals [][]string          `json:"marginals"`
	Delta     float64             `json:"delta"`
	Unit      string              `json:"unit,omitempty"`
}

// binValue returns a raw value of column c that bins to b.
func binValue(t testing.TB, c *spec.Column, b int) string {
	t.Helper()
	var v string
	switch c.Type {
	case spec.Categorical:
		v = c.Values[b]
	case spec.Boolean:
		v = strconv.FormatBool(b == 1)
	case spec.Integer:
		v = strconv.FormatFloat(math.Ceil(c.Edges()[b]), 'f', 0, 64)
	case spec.Numeric:
		v = strconv.FormatFloat(c.Edges()[b], 'g', -1, 64)
	case spec.Date:
		v = c.DateBinStart(b).Format(time.DateOnly)
	}
	if got, err := c.Bin(v); err != nil || got != b {
		t.Fatalf("column %s: no raw value for bin %d (%q bins to %d, %v)", c.Name, b, v, got, err)
	}
	return v
}

func exportForPeer(t testing.TB, dir, name string) {
	t.Helper()
	s := smallSpec(t, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var tr *score.Table
	var units []string
	var err error
	if s.Privacy.Unit != "" {
		tr, units, err = score.TruthUnits(context.Background(), s)
	} else {
		tr, err = score.Truth(context.Background(), s)
	}
	if err != nil {
		t.Fatal(err)
	}
	d := peerDomain{Values: map[string][]string{}, Delta: s.Privacy.Delta, Unit: s.Privacy.Unit}
	for i, c := range s.ReleaseColumns() {
		name := s.Release.Columns[i].Column
		d.Columns = append(d.Columns, name)
		d.Sizes = append(d.Sizes, c.Size())
		for b := range c.Size() {
			d.Values[name] = append(d.Values[name], binValue(t, c, b))
		}
	}
	ms, err := score.WorkloadMarginals(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		var cols []string
		for _, c := range m {
			cols = append(cols, d.Columns[c])
		}
		d.Marginals = append(d.Marginals, cols)
	}
	js, err := json.MarshalIndent(d, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(strings.Join(d.Columns, ","))
	if units != nil {
		b.WriteString(",_unit")
	}
	b.WriteString("\n")
	for i, r := range tr.Rows {
		for j, v := range r {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(strconv.Itoa(v))
		}
		if units != nil {
			b.WriteString("," + units[i])
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, name+".csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
