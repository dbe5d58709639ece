package spec

import (
	"encoding/csv"
	"errors"
	"io"
	"os"
	"testing"
)

// checkCSV reads a table's CSV source and checks that every value of every
// declared non-key column bins without error, and that every declared
// categorical value occurs at least once (a declared value that never occurs
// is legal, but in the example specs it would be a typo).
func checkCSV(t *testing.T, s *Spec, tab Table) {
	t.Helper()
	f, err := os.Open(tab.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[h] = i
	}
	for _, c := range tab.Columns {
		if _, ok := idx[c.Name]; !ok {
			t.Fatalf("%s: declared column %q is not in the file", tab.Source, c.Name)
		}
	}
	seen := map[string]map[string]bool{}
	for row := 2; ; row++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range tab.Columns {
			c := &tab.Columns[i]
			if c.Type == Key {
				continue
			}
			v := rec[idx[c.Name]]
			if _, err := c.Bin(v); err != nil {
				t.Fatalf("%s row %d: %v", tab.Source, row, err)
			}
			if seen[c.Name] == nil {
				seen[c.Name] = map[string]bool{}
			}
			seen[c.Name][v] = true
		}
	}
	for _, c := range tab.Columns {
		for _, v := range c.Values {
			if !seen[c.Name][v] {
				t.Errorf("%s.%s: declared value %q never occurs", tab.Name, c.Name, v)
			}
		}
	}
}
