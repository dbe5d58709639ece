package tpchgen

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// generate writes SF sf with seed into a fresh folder.
func generate(t testing.TB, sf float64, seed uint64) (string, *Result) {
	t.Helper()
	dir := t.TempDir()
	res, err := Generate(context.Background(), Config{ScaleFactor: sf, Seed: seed, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return dir, res
}

// readCSV reads a generated table: header, then rows.
func readCSV(t testing.TB, path string) ([]string, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs[0], recs[1:]
}

func TestDeterministic(t *testing.T) {
	a, _ := generate(t, 0.002, 7)
	b, _ := generate(t, 0.002, 7)
	c, _ := generate(t, 0.002, 8)
	differs := false
	for _, tb := range Tables {
		x, err := os.ReadFile(filepath.Join(a, tb+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		y, _ := os.ReadFile(filepath.Join(b, tb+".csv"))
		z, _ := os.ReadFile(filepath.Join(c, tb+".csv"))
		if !bytes.Equal(x, y) {
			t.Errorf("%s: two runs with seed 7 differ", tb)
		}
		if !bytes.Equal(x, z) {
			differs = true
		}
	}
	if !differs {
		t.Error("seeds 7 and 8 wrote the same files")
	}
	// No temporary file is left.
	entries, _ := os.ReadDir(a)
	if len(entries) != len(Tables) {
		t.Errorf("%d files in the folder, want %d", len(entries), len(Tables))
	}
}

// TestShape checks row counts, keys, referential integrity, 1–7 lines per
// order numbered 1…n, the order status and total from the lines, and
// TPC-H's rule that no customer key divisible by 3 orders.
func TestShape(t *testing.T) {
	const sf = 0.005
	dir, res := generate(t, sf, 3)
	sz := SizesOf(sf)
	_, cust := readCSV(t, filepath.Join(dir, "customer.csv"))
	_, ord := readCSV(t, filepath.Join(dir, "orders.csv"))
	_, li := readCSV(t, filepath.Join(dir, "lineitem.csv"))
	_, nat := readCSV(t, filepath.Join(dir, "nation.csv"))
	if int64(len(cust)) != sz.Customers || int64(len(ord)) != sz.Orders || len(nat) != 25 {
		t.Fatalf("rows: %d customers, %d orders, %d nations; want %d, %d, 25", len(cust), len(ord), len(nat), sz.Customers, sz.Orders)
	}
	if res.Rows["lineitem"] != int64(len(li)) || res.Rows["orders"] != int64(len(ord)) {
		t.Errorf("Result.Rows %v disagrees with the files", res.Rows)
	}
	num := func(s string) int64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cents := func(s string) int64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return int64(math.Round(f * 100))
	}
	custs := map[int64]bool{}
	for _, c := range cust {
		if k := num(c[3]); k < 0 || k > 24 {
			t.Fatalf("customer %s: nation %d", c[0], k)
		}
		custs[num(c[0])] = true
	}
	type agg struct {
		lines         []int64
		total         int64
		nF, nO        int
		status, odate string
	}
	orders := map[int64]*agg{}
	perCust := map[int64]int{}
	for _, o := range ord {
		k, c := num(o[0]), num(o[1])
		if orders[k] != nil {
			t.Fatalf("order key %d twice", k)
		}
		if !custs[c] {
			t.Fatalf("order %d: customer %d does not exist", k, c)
		}
		if c%3 == 0 {
			t.Fatalf("order %d: customer %d is a multiple of 3", k, c)
		}
		perCust[c]++
		orders[k] = &agg{total: cents(o[3]), status: o[2], odate: o[4]}
	}
	for _, l := range li {
		k := num(l[0])
		a := orders[k]
		if a == nil {
			t.Fatalf("line item of missing order %d", k)
		}
		a.lines = append(a.lines, num(l[3]))
		if l[9] == "F" {
			a.nF++
		} else {
			a.nO++
		}
		if !(l[10] > a.odate) {
			t.Fatalf("order %d: ship date %s not after the order date %s", k, l[10], a.odate)
		}
	}
	for k, a := range orders {
		if n := len(a.lines); n < 1 || n > 7 {
			t.Fatalf("order %d has %d lines", k, n)
		}
		for i, ln := range a.lines {
			if ln != int64(i+1) {
				t.Fatalf("order %d: line numbers %v", k, a.lines)
			}
		}
		want := "P"
		if a.nO == 0 {
			want = "F"
		} else if a.nF == 0 {
			want = "O"
		}
		if a.status != want {
			t.Fatalf("order %d: status %s, lines %d F %d O", k, a.status, a.nF, a.nO)
		}
	}
	// Skew: about a third of the customers have no order.
	if got := len(perCust); float64(got) > 0.7*float64(len(cust)) {
		t.Errorf("%d of %d customers ordered; TPC-H leaves a third without orders", got, len(cust))
	}
}

// TestSpecDomains loads SF 0.001 with every TPC-H example spec through
// the engine: every declared column must be inside its domain (the load
// fails on the first value outside).
func TestSpecDomains(t *testing.T) {
	dir, _ := generate(t, 0.001, 11)
	ctx := context.Background()
	for _, name := range []string{"synth.yaml", "orders_lineitem.yaml", "nation.yaml"} {
		t.Run(name, func(t *testing.T) {
			s, err := spec.Load(filepath.Join("../../examples/tpch", name))
			if err != nil {
				t.Fatal(err)
			}
			for i := range s.Tables {
				s.Tables[i].Source = filepath.Join(dir, s.Tables[i].Name+".csv")
			}
			e, err := engine.Open(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if err := e.Load(ctx, s); err != nil {
				t.Fatal(err)
			}
			h, err := s.Hypergraph()
			if err != nil {
				t.Fatal(err)
			}
			if n, err := e.JoinSize(ctx, h); err != nil || n == 0 {
				t.Fatalf("join size %d, %v", n, err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{
		{ScaleFactor: 0, Dir: "x"},
		{ScaleFactor: -1, Dir: "x"},
		{ScaleFactor: math.NaN(), Dir: "x"},
		{ScaleFactor: math.Inf(1), Dir: "x"},
		{ScaleFactor: 1},
		{ScaleFactor: 1, Dir: "x", Skew: 0.5},
		{ScaleFactor: 1, Dir: "x", Skew: 1},
	} {
		if _, err := Generate(context.Background(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: error %v, want ErrConfig", c, err)
		}
	}
}

// TestCancelled checks that a cancelled run leaves no file.
func TestCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Generate(ctx, Config{ScaleFactor: 0.01, Seed: 1, Dir: dir}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a cancelled run left %d files", len(entries))
	}
}

func TestZipfSkew(t *testing.T) {
	dir := t.TempDir()
	if _, err := Generate(context.Background(), Config{ScaleFactor: 0.002, Seed: 1, Dir: dir, Skew: 1.5}); err != nil {
		t.Fatal(err)
	}
	_, ord := readCSV(t, filepath.Join(dir, "orders.csv"))
	n := map[string]int{}
	top := 0
	for _, o := range ord {
		n[o[1]]++
		top = max(top, n[o[1]])
	}
	// With exponent 1.5 the first rank takes 1/ζ(1.5) ≈ 38% of the orders.
	if float64(top) < 0.3*float64(len(ord)) {
		t.Errorf("busiest customer has %d of %d orders; Zipf(1.5) gives it about 38%%", top, len(ord))
	}
}

// BenchmarkGenerate writes SF 0.1 (b.N times); SF 1 takes about 2.3 s on
// one core here.
func BenchmarkGenerate(b *testing.B) {
	for _, sf := range []float64{0.01, 0.1} {
		b.Run(strconv.FormatFloat(sf, 'g', -1, 64), func(b *testing.B) {
			dir := b.TempDir()
			for b.Loop() {
				if _, err := Generate(context.Background(), Config{ScaleFactor: sf, Seed: 1, Dir: dir}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestParquetFormat: the Parquet files hold the CSV files' rows, in the
// same order, with typed columns; two runs write the same bytes; an unknown
// format is a configuration error; no temporary file is left.
func TestParquetFormat(t *testing.T) {
	ctx := context.Background()
	csvDir, _ := generate(t, 0.002, 7)
	pqDir := t.TempDir()
	res, err := Generate(ctx, Config{ScaleFactor: 0.002, Seed: 7, Dir: pqDir, Format: FormatParquet})
	if err != nil {
		t.Fatal(err)
	}
	again := t.TempDir()
	if _, err := Generate(ctx, Config{ScaleFactor: 0.002, Seed: 7, Dir: again, Format: FormatParquet}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tb := range Tables {
		path := filepath.Join(pqDir, tb+".parquet")
		if res.Files[tb] != path {
			t.Errorf("%s: file %q, want %q", tb, res.Files[tb], path)
		}
		x, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if y, _ := os.ReadFile(filepath.Join(again, tb+".parquet")); !bytes.Equal(x, y) {
			t.Errorf("%s: two runs with seed 7 differ", tb)
		}
		// Row i of the Parquet file is row i of the CSV file, value by
		// value as text.
		_, rows := readCSV(t, filepath.Join(csvDir, tb+".csv"))
		rs, err := db.Query("SELECT COLUMNS(*)::VARCHAR FROM read_parquet('" + path + "')")
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		i := 0
		for ; rs.Next(); i++ {
			got := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for k := range got {
				ptrs[k] = &got[k]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			if i >= len(rows) {
				continue
			}
			for k, v := range got {
				if want := rows[i][k]; !sameValue(v.String, want) {
					t.Fatalf("%s row %d column %s: %q in Parquet, %q in CSV", tb, i, cols[k], v.String, want)
				}
			}
		}
		rs.Close()
		if i != len(rows) {
			t.Errorf("%s: %d rows in Parquet, %d in CSV", tb, i, len(rows))
		}
	}
	var lineTypes string
	if err := db.QueryRow(`SELECT string_agg(column_type, ',' ORDER BY column_name) FROM (DESCRIBE SELECT l_orderkey, l_quantity, l_shipdate, l_returnflag FROM read_parquet('` +
		filepath.Join(pqDir, "lineitem.parquet") + `'))`).Scan(&lineTypes); err != nil {
		t.Fatal(err)
	}
	if lineTypes != "BIGINT,BIGINT,VARCHAR,DATE" {
		t.Errorf("lineitem types (l_orderkey, l_quantity, l_returnflag, l_shipdate) %s", lineTypes)
	}
	if entries, _ := os.ReadDir(pqDir); len(entries) != len(Tables) {
		t.Errorf("%d files in the folder, want %d", len(entries), len(Tables))
	}
	if _, err := Generate(ctx, Config{ScaleFactor: 0.002, Dir: t.TempDir(), Format: "xlsx"}); !errors.Is(err, ErrConfig) {
		t.Errorf("format xlsx: %v, want ErrConfig", err)
	}
}

// sameValue compares a value DuckDB read back as text with the CSV text:
// equal, or the same number (DuckDB prints 901.00 as 901.0).
func sameValue(got, want string) bool {
	if got == want {
		return true
	}
	g, err1 := strconv.ParseFloat(got, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && g == w
}

// TestParquetCancelLeavesNothing: cancelling Generate while DuckDB writes a
// Parquet file leaves no file in the folder (DuckDB's own temporary file
// used to stay).
func TestParquetCancelLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("generates SF 0.2")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer cancel()
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			es, _ := os.ReadDir(dir)
			for _, e := range es {
				info, err := e.Info()
				if strings.Contains(e.Name(), "lineitem") && strings.Contains(e.Name(), "parquet") && err == nil && info.Size() > 0 {
					return // the lineitem conversion is under way
				}
			}
		}
	}()
	_, err := Generate(ctx, Config{ScaleFactor: 0.2, Seed: 1, Dir: dir, Format: FormatParquet})
	close(done)
	if err == nil {
		t.Skip("the conversion ended before the cancellation: nothing to check")
	}
	if !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "nterrupt") {
		t.Errorf("Generate = %v, want a cancellation", err)
	}
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		t.Errorf("left behind: %s", e.Name())
	}
}
