package cli

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/privacyunit"
)

// TestInspectCountForecast (issue 40): on Retail restricted to 100
// customers (testdata/retail/small, unit customer, ε = 1) inspect's
// NON-PRIVATE section forecasts the release's row count from the units'
// true join rows, and says the marginals are in the few-rows regime. The
// oracle counts each customer's lines from the CSVs by hand (lines →
// invoices → customers) and runs privacyunit.ForecastCount on those counts
// (itself held against the shipped mechanism by TestForecastCount): the
// JSON must carry exactly its figures, the units' median and largest row
// counts, and the text its lines. The TPC-H example (1,000 customers with
// orders) is above the few-rows line at the default share.
func TestInspectCountForecast(t *testing.T) {
	dir := t.TempDir()
	data, err := filepath.Abs("../../testdata/retail/small")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../examples/retail/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "synth.yaml")
	if err := os.WriteFile(config, []byte(strings.ReplaceAll(string(b), "../../testdata/retail/", data+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	// The oracle: lines per customer.
	read := func(name string) [][]string {
		f, err := os.Open(filepath.Join(data, name))
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
	owner := map[string]string{} // invoice → customer
	for _, r := range read("invoices.csv") {
		owner[r[0]] = r[1]
	}
	perUnit := map[string]int64{}
	for _, r := range read("lines.csv") {
		if c, ok := owner[r[0]]; ok {
			perUnit[c]++
		}
	}
	var counts []int64
	var degs []engine.UnitDegree
	for _, n := range perUnit {
		counts = append(counts, n)
		degs = append(degs, engine.UnitDegree{Rows: n, Units: 1})
	}
	slices.Sort(counts)
	want := privacyunit.ForecastCount(1, degs)

	var rep struct {
		NonPrivate struct {
			Count *custodianCount `json:"row_count_forecast"`
		} `json:"non_private"`
	}
	r := mustRun(t, "-q", "inspect", "--config", config, "--format", "json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("inspect's JSON: %v\n%s", err, r.stdout)
	}
	c := rep.NonPrivate.Count
	if c == nil {
		t.Fatalf("no row count forecast in inspect's JSON:\n%s", r.stdout)
	}
	if c.Units != 100 || c.Rows != 7137 || c.MaxUnitRows != counts[len(counts)-1] || c.MedianUnitRows != counts[(len(counts)-1)/2] {
		t.Errorf("units %d rows %d median %d max %d, want 100, 7137, %d, %d", c.Units, c.Rows, c.MedianUnitRows, c.MaxUnitRows,
			counts[(len(counts)-1)/2], counts[len(counts)-1])
	}
	if c.Share != want.Share || c.Clip != want.Clip || c.MeanRatio != want.MeanRatio || c.Below != want.Below || c.Above != want.Above || c.Tiny != want.Tiny {
		t.Errorf("forecast %+v, want ForecastCount's %+v", *c, want)
	}
	// 100 units at ε = 1: the count's share is at its cap and the 100 rows
	// of bounded weight (r = 1) are below 8σ.
	if c.Share != privacyunit.MaxCountShare || !c.FewRows || c.WeightRows != 100 || !(c.KeepRows > 0 && c.KeepRows < 3*c.SigmaRows) {
		t.Errorf("share %g few rows %v weight %g keep %g (σ %g): want the capped share, the few-rows regime at weight 100 and 0 < keep < 3σ",
			c.Share, c.FewRows, c.WeightRows, c.KeepRows, c.SigmaRows)
	}
	text := mustRun(t, "-q", "inspect", "--config", config).stdout
	for _, line := range []string{"NON-PRIVATE row count forecast:", "100 units own the 7137 join rows", "NON-PRIVATE small data:", "few-rows regime"} {
		if !strings.Contains(text, line) {
			t.Errorf("inspect's text lacks %q", line)
		}
	}

	rep.NonPrivate.Count = nil
	r = mustRunShared(t, "-q", "inspect", "--config", tpchSpec, "--format", "json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if c := rep.NonPrivate.Count; c == nil || c.Units != 1000 || c.Share != privacyunit.DefaultCountShare || c.FewRows || c.KeepRows != 0 || c.Again {
		t.Errorf("TPC-H: row count forecast %+v, want 1,000 units at the default share, above 20σ", c)
	}
	// At ε = 0.3 its 1,000 rows of bounded weight fall between 8σ and 20σ
	// (the release's n̂/σ₀ is 16–18 there, docs/small-data.md): the 1-ways
	// are measured again, at the public forecast's combined noise scaled
	// to the count's share.
	rep.NonPrivate.Count = nil
	low := tpchVariant(t, tpchSpec, func(s string) string { return strings.Replace(s, "epsilon: 1.0", "epsilon: 0.3", 1) }, nil)
	r = mustRun(t, "-q", "inspect", "--config", low, "--format", "json")
	var pub struct {
		Forecast struct {
			Sigma      float64 `json:"noise_per_cell_rows"`
			SigmaAgain float64 `json:"one_way_noise_per_cell_rows_again"`
		} `json:"signal_forecast"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(r.stdout), &pub); err != nil {
		t.Fatal(err)
	}
	c = rep.NonPrivate.Count
	if c == nil || c.FewRows || !c.Again || c.WeightRows < pmw.PoolRatio*c.SigmaRows || c.WeightRows >= pmw.AgainRatio*c.SigmaRows ||
		math.Abs(c.AgainSigmaRows-pub.Forecast.SigmaAgain*c.SigmaRows/pub.Forecast.Sigma) > 1e-9*c.SigmaRows {
		t.Errorf("TPC-H at ε = 0.3: row count forecast %+v (public σ %v, again %v), want the 1-ways measured again", c, pub.Forecast.Sigma, pub.Forecast.SigmaAgain)
	}
	if text := mustRun(t, "-q", "inspect", "--config", low).stdout; !strings.Contains(text, "measures the 1-way marginals again right after") {
		t.Errorf("TPC-H at ε = 0.3: inspect's text lacks the regime:\n%s", text)
	}
}
