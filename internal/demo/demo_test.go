package demo

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteMatchesExample42 checks the instance against its definition:
// for each i there are k²/8^i customers with 2^i transactions each, every
// transaction references a customer, and about 60% of a tier's
// transactions use its favourite channel.
func TestWriteMatchesExample42(t *testing.T) {
	for _, k := range []int{8, 64, 128} {
		dir := t.TempDir()
		s, err := Write(dir, k, 1, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		counts := Degrees(k)
		if counts[0] != k*k {
			t.Errorf("k=%d: %d customers of one transaction, want k² = %d", k, counts[0], k*k)
		}
		read := func(name string) [][]string {
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			return rows[1:]
		}
		customers, txs := read("customers.csv"), read("transactions.csv")
		wantCust, wantTx := 0, 0
		wantDeg := map[int]int{}
		for i, c := range counts {
			wantCust += c
			wantTx += c << i
			wantDeg[1<<i] = c
		}
		if len(customers) != wantCust || len(txs) != wantTx {
			t.Errorf("k=%d: %d customers and %d transactions, want %d and %d", k, len(customers), len(txs), wantCust, wantTx)
		}
		tier := map[string]string{}
		for _, c := range customers {
			tier[c[0]] = c[1]
		}
		deg := map[string]int{}
		fav, all := 0, 0
		for _, tx := range txs {
			tr, ok := tier[tx[1]]
			if !ok {
				t.Fatalf("k=%d: transaction %s references no customer (%s)", k, tx[0], tx[1])
			}
			deg[tx[1]]++
			all++
			if tx[2] == Favourite[tr] {
				fav++
			}
		}
		got := map[int]int{}
		for _, d := range deg {
			got[d]++
		}
		for d, c := range wantDeg {
			if got[d] != c {
				t.Errorf("k=%d: %d customers with %d transactions, want %d", k, got[d], d, c)
			}
		}
		// 60% in expectation; the bound is 5σ of a binomial share.
		if share := float64(fav) / float64(all); k >= 64 && (share < 0.55 || share > 0.65) {
			t.Errorf("k=%d: %.3f of transactions use their tier's favourite channel, want about 0.6", k, share)
		}
		if s.Privacy.Unit != "customers" || len(s.Release.Columns) != 3 {
			t.Errorf("k=%d: spec not as expected: unit %q, release %+v", k, s.Privacy.Unit, s.Release)
		}
	}
}
