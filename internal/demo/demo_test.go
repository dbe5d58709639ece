package demo

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteMatchesExample42 checks the instance against its definition: for
// each i there are k²/8^i branches of degree 2^i in both tables, so each
// table has Σ counts[i]·2^i rows.
func TestWriteMatchesExample42(t *testing.T) {
	for _, k := range []int{8, 64, 128} {
		dir := t.TempDir()
		s, err := Write(dir, k, 1, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		counts := Degrees(k)
		if counts[0] != k*k {
			t.Errorf("k=%d: %d degree-1 values, want k² = %d", k, counts[0], k*k)
		}
		wantRows := 0
		wantDeg := map[int]int{} // degree -> number of branches
		for i, c := range counts {
			wantRows += c << i
			wantDeg[1<<i] = c
		}
		for _, name := range []string{"accounts.csv", "transactions.csv"} {
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(rows)-1 != wantRows {
				t.Errorf("k=%d %s: %d rows, want %d", k, name, len(rows)-1, wantRows)
			}
			deg := map[string]int{}
			for _, r := range rows[1:] {
				deg[r[1]]++
			}
			got := map[int]int{}
			for _, d := range deg {
				got[d]++
			}
			for d, c := range wantDeg {
				if got[d] != c {
					t.Errorf("k=%d %s: %d branches of degree %d, want %d", k, name, got[d], d, c)
				}
			}
		}
		if len(s.Release.Columns) != 3 || s.Table("accounts") == nil {
			t.Errorf("k=%d: spec not as expected: %+v", k, s.Release)
		}
	}
}
