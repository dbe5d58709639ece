package hiergen

import (
	"encoding/csv"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/uniformize"
)

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
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

func TestWrite(t *testing.T) {
	for _, k := range []int{1, 8, 32} {
		dir := t.TempDir()
		path, err := Write(dir, k, 1, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		s, err := spec.Load(path)
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		h, err := s.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		tr, err := uniformize.NewTree(h)
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		if tr.Len() != 2 || len(tr.Roots()) != 1 {
			t.Errorf("k=%d: tree\n%s want one root with one child", k, tr)
		}
		t.Logf("k=%d tree:\n%s", k, tr)

		members := readCSV(t, filepath.Join(dir, "members.csv"))
		purchases := readCSV(t, filepath.Join(dir, "purchases.csv"))
		staff := readCSV(t, filepath.Join(dir, "staff.csv"))
		perStore := map[string]int{}
		storeOf := map[string]string{}
		for _, r := range members {
			perStore[r[1]]++
			storeOf[r[0]] = r[1]
		}
		classes := map[int]int{}
		for _, n := range perStore {
			classes[n]++
		}
		for i, c := range Stores(k) {
			if classes[1<<i] != c {
				t.Errorf("k=%d: %d stores with %d members, want %d", k, classes[1<<i], 1<<i, c)
			}
		}
		perMember := map[string]int{}
		for _, r := range purchases {
			if storeOf[r[2]] != r[1] {
				t.Fatalf("purchase %v: member in store %s", r, storeOf[r[2]])
			}
			perMember[r[2]]++
		}
		if len(perMember) != len(members) {
			t.Errorf("k=%d: %d members purchase, want all %d", k, len(perMember), len(members))
		}
		for m, n := range perMember {
			if bits.OnesCount(uint(n)) != 1 || n > perStore[storeOf[m]] {
				t.Errorf("member %s: %d purchases", m, n)
			}
		}
		perStaff := map[string]int{}
		for _, r := range staff {
			perStaff[r[1]]++
		}
		if len(perStaff) != len(perStore) {
			t.Errorf("k=%d: staff in %d stores, want %d", k, len(perStaff), len(perStore))
		}
		t.Logf("k=%d: %d stores, %d members, %d purchases, %d staff", k, len(perStore), len(members), len(purchases), len(staff))
	}
}
