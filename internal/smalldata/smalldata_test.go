package smalldata

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the small-data suite in testdata/ from the generator")

const testdata = "../../testdata"

// TestFiles checks that the committed small-data files are exactly what
// Write produces (the PROVENANCE.md claim); -update rewrites them.
func TestFiles(t *testing.T) {
	if *update {
		if err := Write(testdata); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for _, d := range []string{"adult", "bank", "retail"} {
		// Write reads the full sources from testdata; mirror them by symlink.
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(filepath.Join(testdata, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".csv") {
				abs, _ := filepath.Abs(filepath.Join(testdata, d, e.Name()))
				if err := os.Symlink(abs, filepath.Join(dir, d, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range []string{"adult", "bank", "retail"} {
		got, err := filepath.Glob(filepath.Join(dir, d, "small", "*.csv"))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			want, err := os.ReadFile(filepath.Join(testdata, d, "small", filepath.Base(g)))
			if err != nil {
				t.Fatalf("%v (run go test ./internal/smalldata -update)", err)
			}
			b, err := os.ReadFile(g)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("testdata/%s/small/%s differs from the generator's output", d, filepath.Base(g))
			}
			n++
		}
	}
	if n != 2*len(Sizes)+3 {
		t.Fatalf("%d files written, want %d", n, 2*len(Sizes)+3)
	}
}

// TestNested: the subsamples are nested (500 ⊂ 2,000 ⊂ 5,000) and keep the
// source's order, and Retail keeps exactly k customers with every invoice
// and line of theirs.
func TestNested(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.csv")
	// 50 distinct rows in ascending order.
	var rows []string
	for i := range 50 {
		rows = append(rows, string(rune('A'+i/26))+string(rune('a'+i%26)))
	}
	if err := os.WriteFile(src, []byte("id\n"+strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prev := map[string]bool{}
	for _, n := range []int{5, 20, 50} {
		dst := filepath.Join(dir, "out.csv")
		if err := Subsample(src, dst, n); err != nil {
			t.Fatal(err)
		}
		recs, err := readCSV(dst)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != n+1 {
			t.Fatalf("n = %d: %d rows", n, len(recs)-1)
		}
		got := map[string]bool{}
		last := ""
		for _, r := range recs[1:] {
			if r[0] <= last {
				t.Fatalf("n = %d: rows out of source order (%q after %q)", n, r[0], last)
			}
			last = r[0]
			got[r[0]] = true
		}
		for k := range prev {
			if !got[k] {
				t.Fatalf("n = %d drops %q, kept at a smaller n", n, k)
			}
		}
		prev = got
	}
	if err := Subsample(src, filepath.Join(dir, "x.csv"), 51); err == nil {
		t.Fatal("51 of 50 rows: no error")
	}
}

// TestRetailClosed: the small Retail sample has RetailCustomers customers,
// and every invoice of a kept customer and every line of a kept invoice
// (checked against the full sample).
func TestRetailClosed(t *testing.T) {
	read := func(dir, f string) [][]string {
		r, err := readCSV(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return r[1:]
	}
	full, small := filepath.Join(testdata, "retail"), filepath.Join(testdata, "retail", "small")
	cust := map[string]bool{}
	for _, r := range read(small, "customers.csv") {
		cust[r[0]] = true
	}
	if len(cust) != RetailCustomers {
		t.Fatalf("%d customers, want %d", len(cust), RetailCustomers)
	}
	inv := map[string]bool{}
	nInv := 0
	for _, r := range read(full, "invoices.csv") {
		if cust[r[1]] {
			inv[r[0]] = true
			nInv++
		}
	}
	nLines := 0
	for _, r := range read(full, "lines.csv") {
		if inv[r[0]] {
			nLines++
		}
	}
	if g := len(read(small, "invoices.csv")); g != nInv {
		t.Errorf("%d invoices, the kept customers have %d", g, nInv)
	}
	if g := len(read(small, "lines.csv")); g != nLines {
		t.Errorf("%d lines, the kept invoices have %d", g, nLines)
	}
}
