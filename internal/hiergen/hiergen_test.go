package hiergen

import (
	"context"
	"encoding/csv"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/hypergraph"
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

// memInstance backs uniformize.HierInstance with the CSVs, by nested-loop
// joins: enough for the example at small k.
type memInstance struct {
	h    *hypergraph.Hypergraph
	rows [][]map[string]string // per relation, per tuple: attribute -> value
}

func loadMem(t *testing.T, dir string, h *hypergraph.Hypergraph) *memInstance {
	m := &memInstance{h: h}
	for i := range h.Len() {
		r := h.Relation(i)
		f, err := os.Open(filepath.Join(dir, r.Name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		all, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var rel []map[string]string
		for _, row := range all[1:] {
			tup := map[string]string{}
			for a, col := range r.Attrs {
				tup[a] = row[slices.Index(all[0], col)]
			}
			rel = append(rel, tup)
		}
		m.rows = append(m.rows, rel)
	}
	return m
}

func key(tup map[string]string, attrs []string) uniformize.HierKey {
	parts := make([]string, len(attrs))
	for i, a := range attrs {
		parts[i] = tup[a]
	}
	return uniformize.HierKey(strings.Join(parts, "\x00"))
}

func (m *memInstance) Degrees(_ context.Context, q uniformize.HierDegreeQuery) (map[uniformize.HierKey]int64, error) {
	keep := func(j int, tup map[string]string) bool {
		for _, c := range q.Conds {
			if c.Atom.Has(j) && !c.Keep(key(tup, c.Attrs)) {
				return false
			}
		}
		return true
	}
	members := q.E.Members()
	out := map[uniformize.HierKey]int64{}
	if len(members) == 1 {
		for _, tup := range m.rows[members[0]] {
			if keep(members[0], tup) {
				out[key(tup, q.Y)]++
			}
		}
		return out, nil
	}
	// Join on the attributes the relations of E share: pairwise nested
	// loops for the two relations of this example.
	if len(members) != 2 {
		return nil, fmt.Errorf("memInstance: %d relations", len(members))
	}
	seen := map[uniformize.HierKey]bool{}
	a, b := members[0], members[1]
	for _, u := range m.rows[a] {
		if !keep(a, u) {
			continue
		}
	next:
		for _, v := range m.rows[b] {
			if !keep(b, v) {
				continue
			}
			for x, val := range u {
				if w, ok := v[x]; ok && w != val {
					continue next
				}
			}
			if z := key(u, q.Z); !seen[z] {
				seen[z] = true
				out[key(u, q.Y)]++
			}
		}
	}
	return out, nil
}

// TestPartitionExample runs the hierarchical partition on the example: the
// skewed member degrees spread over several buckets, and the budget split
// follows the tree (staff is off member_id's path: K = L).
func TestPartitionExample(t *testing.T) {
	dir := t.TempDir()
	path, err := Write(dir, 32, 1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := uniformize.NewTree(h)
	if err != nil {
		t.Fatal(err)
	}
	const eps, delta = 8.0, 1e-3 // large, so that λ is small next to the degrees of k = 32
	levels, err := uniformize.HierLevels(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	deg, err := uniformize.HierDegreeBudget(eps, delta, tr, levels)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := uniformize.HierBudget(eps, delta, tr, levels)
	if err != nil {
		t.Fatal(err)
	}
	if deg.K != 1 || rel.K != int64(levels) {
		t.Errorf("K_deg = %d, K = %d, want 1 and L = %d", deg.K, rel.K, levels)
	}
	res, err := uniformize.PartitionHierarchical(context.Background(), tr, loadMem(t, dir, h),
		uniformize.HierParams{Eps: deg.Eps, Delta: deg.Delta, Levels: levels}, dp.NewSeededSource(5))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("L = %d, λ = τ′ = %d, %d sub-instances", levels, res.Lambda, len(res.Subs))
	if len(res.Subs) < 3 {
		t.Errorf("only %d sub-instances: the skew did not split", len(res.Subs))
	}
}
