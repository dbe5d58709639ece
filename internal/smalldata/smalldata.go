// Package smalldata builds the small-data suite (issue 40) from the public
// data sets in testdata/: seeded row subsamples of UCI Adult and UCI Bank
// Marketing at 500, 2,000 and 5,000 rows, and the Online Retail sample
// restricted to 100 of its customers with all their invoices and lines.
//
// Every subsample is a fixed function of the source file and Seed: the rows
// (or customers) are ordered by one seeded permutation and the first n are
// kept, in the source file's order. So the 500-row file is a subset of the
// 2,000-row file, which is a subset of the 5,000-row file. The files are
// committed (testdata/adult/small, testdata/bank/small,
// testdata/retail/small); TestFiles checks they are exactly what Write
// produces and `go test ./internal/smalldata -update` rewrites them.
package smalldata

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// Seed is the PCG seed of every permutation (the number).
const Seed = 40

// Sizes are the row counts of the Adult and Bank subsamples.
var Sizes = []int{500, 2000, 5000}

// RetailCustomers is the number of customers of the small Retail sample.
const RetailCustomers = 100

// permutation returns the seeded permutation of 0..n-1 that orders the rows.
func permutation(n int) []int {
	return rand.New(rand.NewPCG(Seed, 0)).Perm(n)
}

// firstOf returns the indices of the first k of n items in the seeded
// order, ascending (the source's order).
func firstOf(n, k int) ([]int, error) {
	if k > n {
		return nil, fmt.Errorf("smalldata: %d of %d rows asked", k, n)
	}
	idx := slices.Clone(permutation(n)[:k])
	slices.Sort(idx)
	return idx, nil
}

func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("smalldata: %w", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("smalldata: %s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("smalldata: %s: no header", path)
	}
	return recs, nil
}

func writeCSV(path string, recs [][]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("smalldata: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("smalldata: %w", err)
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(recs); err != nil {
		f.Close()
		return fmt.Errorf("smalldata: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("smalldata: %s: %w", path, err)
	}
	return nil
}

// Subsample writes the header and n rows of the CSV file src to dst: the
// first n rows of the seeded permutation, in src's order.
func Subsample(src, dst string, n int) error {
	recs, err := readCSV(src)
	if err != nil {
		return err
	}
	idx, err := firstOf(len(recs)-1, n)
	if err != nil {
		return fmt.Errorf("%w (%s)", err, src)
	}
	out := [][]string{recs[0]}
	for _, i := range idx {
		out = append(out, recs[1+i])
	}
	return writeCSV(dst, out)
}

// Retail writes customers.csv, invoices.csv and lines.csv of the Retail
// sample in srcDir restricted to k customers (the first k of the seeded
// permutation of customers.csv's rows) with all their invoices and lines,
// each file in its source order.
func Retail(srcDir, dstDir string, k int) error {
	cust, err := readCSV(filepath.Join(srcDir, "customers.csv"))
	if err != nil {
		return err
	}
	inv, err := readCSV(filepath.Join(srcDir, "invoices.csv"))
	if err != nil {
		return err
	}
	lines, err := readCSV(filepath.Join(srcDir, "lines.csv"))
	if err != nil {
		return err
	}
	idx, err := firstOf(len(cust)-1, k)
	if err != nil {
		return err
	}
	keepCust := map[string]bool{}
	outCust := [][]string{cust[0]}
	for _, i := range idx {
		keepCust[cust[1+i][0]] = true
		outCust = append(outCust, cust[1+i])
	}
	keepInv := map[string]bool{}
	outInv := [][]string{inv[0]}
	for _, r := range inv[1:] {
		if keepCust[r[1]] { // invoice_no, customer_id, ...
			keepInv[r[0]] = true
			outInv = append(outInv, r)
		}
	}
	outLines := [][]string{lines[0]}
	for _, r := range lines[1:] {
		if keepInv[r[0]] { // invoice_no, line_no, ...
			outLines = append(outLines, r)
		}
	}
	for name, recs := range map[string][][]string{"customers.csv": outCust, "invoices.csv": outInv, "lines.csv": outLines} {
		if err := writeCSV(filepath.Join(dstDir, name), recs); err != nil {
			return err
		}
	}
	return nil
}

// Write writes the whole suite below testdata (the repository's testdata
// folder): adult/small/adult_N.csv, bank/small/bank_N.csv for N in Sizes,
// and retail/small/{customers,invoices,lines}.csv.
func Write(testdata string) error {
	for _, d := range []struct{ name, src string }{
		{"adult", "adult/adult_train.csv"},
		{"bank", "bank/bank-full.csv"},
	} {
		for _, n := range Sizes {
			dst := filepath.Join(testdata, d.name, "small", fmt.Sprintf("%s_%d.csv", d.name, n))
			if err := Subsample(filepath.Join(testdata, d.src), dst, n); err != nil {
				return err
			}
		}
	}
	return Retail(filepath.Join(testdata, "retail"), filepath.Join(testdata, "retail", "small"), RetailCustomers)
}
