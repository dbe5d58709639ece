package score

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

func TestTVD(t *testing.T) {
	for _, c := range []struct {
		p, q []float64
		want float64
	}{
		{[]float64{1, 0}, []float64{0, 1}, 1},
		{[]float64{0.5, 0.5}, []float64{0.5, 0.5}, 0},
		{[]float64{0.2, 0.3, 0.5}, []float64{0.3, 0.3, 0.4}, 0.1},
	} {
		if got := TVD(c.p, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("TVD(%v, %v) = %v, want %v", c.p, c.q, got, c.want)
		}
	}
}

func TestMarginalMixedRadix(t *testing.T) {
	tab := &Table{Rows: [][]int{{0, 2, 1}, {1, 0, 1}, {1, 2, 0}, {1, 2, 1}}}
	sizes := []int{2, 3, 2}
	got := tab.Marginal([]int{0, 1}, sizes)
	want := []float64{0, 0, 0.25, 0.25, 0, 0.5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("marginal = %v, want %v", got, want)
		}
	}
	r := Score(tab, tab, [][]int{{0}, {1, 2}}, sizes)
	if r.MeanTVD != 0 || r.MeanUniformTVD <= 0 {
		t.Fatalf("self score %+v", r)
	}
}

// TestTruthMatchesEngine: the scorer's true join (raw files, Go binning)
// and the engine's histogram (loaded tables, SQL binning) agree cell by
// cell on TPC-H and Adult: two independent paths to the same numbers.
func TestTruthMatchesEngine(t *testing.T) {
	for _, name := range []string{"tpch", "adult"} {
		t.Run(name, func(t *testing.T) {
			s, err := spec.Load(filepath.Join("..", "..", "examples", name, "synth.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			truthMatchesEngine(t, s)
		})
	}
}

// TestTruthPolicies: the scorer applies out_of_domain clamp and drop as the
// engine's load does, on a join where a dropped parent row takes its
// children's join rows with it, a dropped column is not released, and
// clamped numbers and dates fall below and above their ranges. Scoring
// this spec before the policies were applied in the scorer failed (an
// out-of-domain error on the clamped values; with those removed, the
// dropped rows' join rows were counted).
func TestTruthPolicies(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("p.csv", "id,a,b,d\n1,0.5,x,2020-03-01\n2,-7,y,2019-01-01\n3,99,zz,2020-06-01\n4,1.5,,2020-01-01\n5,2.5,x,2031-01-01\n")
	write("c.csv", "pid,q,w\n1,3,u\n1,11,v\n2,4,u\n2,5,u\n3,1,u\n4,2,v\n5,12,u\n5,3,bad\n1,,u\n5,7,u\n")
	write("synth.yaml", `privacy: {epsilon: 1.0, delta: 1e-6}
tables:
  - name: p
    source: p.csv
    primary_key: id
    columns:
      id: {type: key}
      a: {type: numeric, min: 0, max: 3, bins: 3, out_of_domain: clamp}
      b: {type: categorical, values: [x, y], out_of_domain: drop}
      d: {type: date, min: 2020-01-01, max: 2020-12-31, granularity: month, out_of_domain: clamp}
  - name: c
    source: c.csv
    columns:
      pid: {type: key}
      q: {type: integer, min: 1, max: 10, bins: 5, out_of_domain: drop}
      w: {type: categorical, values: [u, v], out_of_domain: drop}
join:
  - c.pid = p.id
release:
  columns: [a, d, q]
`)
	s, err := spec.Load(filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := truthMatchesEngine(t, s)
	// p rows 3 (b = zz) and 4 (b empty) drop with their children; c rows
	// with q = 11, q = 12, q empty and w = bad drop: 4 join rows remain,
	// two of them with a clamped a or d.
	if n != 4 {
		t.Fatalf("join size %d, want 4", n)
	}
}

// truthMatchesEngine requires the scorer's true join of s to have the
// engine's histogram of the loaded tables, and returns its size.
func truthMatchesEngine(t *testing.T, s *spec.Spec) int64 {
	t.Helper()
	ctx := context.Background()
	truth, err := Truth(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(ctx, "duckdb")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if err := eng.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	sizes := s.ReleaseSizes()
	cells, err := eng.Histogram(ctx, h, s.Release.Columns, sizes)
	if err != nil {
		t.Fatal(err)
	}
	mine := map[int64]int64{}
	for _, r := range truth.Rows {
		k := int64(0)
		for j, b := range r {
			k = k*int64(sizes[j]) + int64(b)
		}
		mine[k]++
	}
	var n int64
	for _, c := range cells {
		n += c.Count
		if mine[c.Index] != c.Count {
			t.Fatalf("cell %d: engine %d, scorer %d", c.Index, c.Count, mine[c.Index])
		}
	}
	if n != int64(len(truth.Rows)) {
		t.Fatalf("engine join size %d, scorer %d", n, len(truth.Rows))
	}
	return n
}

// TestTruthUnits: the small Retail sample (100 customers) read with its
// unit's keys has Truth's rows in the same order and, per customer, as
// many join rows as lines.csv has for that customer's invoices (counted
// here from the raw files, without a join); a spec without a unit is an
// error.
func TestTruthUnits(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "retail", "small")
	yaml := `privacy: {epsilon: 1, delta: 1e-6, unit: customers}
tables:
  - name: customers
    source: ` + filepath.Join(dir, "customers.csv") + `
    primary_key: customer_id
    columns:
      customer_id: {type: key}
      country: {type: categorical, values: [Australia, Austria, Bahrain, Belgium, Brazil, Canada, Channel Islands, Cyprus, Czech Republic, Denmark, EIRE, European Community, Finland, France, Germany, Greece, Hong Kong, Iceland, Israel, Italy, Japan, Lebanon, Lithuania, Malta, Netherlands, Norway, Poland, Portugal, RSA, Saudi Arabia, Singapore, Spain, Sweden, Switzerland, USA, United Arab Emirates, United Kingdom, Unspecified]}
  - name: invoices
    source: ` + filepath.Join(dir, "invoices.csv") + `
    primary_key: invoice_no
    columns:
      invoice_no: {type: key}
      customer_id: {type: key}
      cancelled: {type: boolean}
join:
  - invoices.customer_id = customers.customer_id
release:
  columns: [country, cancelled]
`
	s, err := spec.Parse([]byte(yaml), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plain, err := Truth(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	tab, keys, err := TruthUnits(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(tab.Rows) || len(tab.Rows) != len(plain.Rows) {
		t.Fatalf("%d keys, %d rows, Truth %d rows", len(keys), len(tab.Rows), len(plain.Rows))
	}
	got := map[string]int{}
	for _, k := range keys {
		got[k]++
	}
	raw, err := os.ReadFile(filepath.Join(dir, "invoices.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if i > 0 {
			want[strings.Split(line, ",")[1]]++
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d units, want %d", len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("customer %s: %d rows, want %d", k, got[k], n)
		}
	}
	s.Privacy.Unit = ""
	if _, _, err := TruthUnits(ctx, s); err == nil {
		t.Fatal("no unit: no error")
	}
}
