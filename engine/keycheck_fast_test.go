package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// TestCheckPrimaryKeyIncreasing checks the primary key check, whose fast
// path passes a table whose keys strictly increase from row to row
// (Engine.increasingKey), against a Go enumeration on random two-column
// keys (integer and text) in random orders: sorted, sorted with a
// duplicate or a NULL planted, and shuffled. The check fails exactly when
// a key repeats or holds a NULL, with a repeated (or NULL) key and its
// count; the fast path never passes such a table (soundness) and passes
// every table the file orders strictly (the scan reads a small file in
// its order). Each instance is loaded into the same engine, which also
// checks that a check passed on one load is run again on the next.
func TestCheckPrimaryKeyIncreasing(t *testing.T) {
	r := rand.New(rand.NewPCG(stattest.Seed(t), 41))
	ctx := context.Background()
	e := openDSNTest(t, "duckdb::memory:")
	n := 60
	if testing.Short() {
		n = 20
	}
	for i := range n {
		m := 1 + r.IntN(40)
		type key struct {
			a, b string
		}
		keys := make([]key, 0, m)
		seen := map[key]bool{}
		for len(keys) < m {
			k := key{strconv.Itoa(r.IntN(8)), string(rune('a' + r.IntN(6)))}
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		// The engine's order: o_a holds integers only (stored as BIGINT),
		// o_b text.
		less := func(x, y key) int {
			xa, _ := strconv.Atoi(x.a)
			ya, _ := strconv.Atoi(y.a)
			return cmp.Or(cmp.Compare(xa, ya), cmp.Compare(x.b, y.b))
		}
		slices.SortFunc(keys, less)
		kind := []string{"sorted", "duplicate", "null", "shuffled"}[i%4]
		switch kind {
		case "duplicate":
			j := r.IntN(len(keys))
			keys = slices.Insert(keys, j, keys[j])
		case "null":
			keys[r.IntN(len(keys))] = [2]key{{"", "a"}, {"1", ""}}[r.IntN(2)]
		case "shuffled":
			r.Shuffle(len(keys), func(x, y int) { keys[x], keys[y] = keys[y], keys[x] })
		}
		count := map[key]int{}
		null := false
		increasing := true
		for j, k := range keys {
			count[k]++
			null = null || k.a == "" || k.b == ""
			if j > 0 && less(keys[j-1], k) >= 0 {
				increasing = false
			}
		}
		bad := null
		var rows [][]string
		for _, k := range keys {
			bad = bad || count[k] > 1
			rows = append(rows, []string{k.a, k.b, "x"})
		}
		dir := t.TempDir()
		src := writeCSV(t, dir, "o.csv", []string{"o_a", "o_b", "o_cat"}, rows)
		s, err := spec.Parse([]byte(fmt.Sprintf(`privacy: {epsilon: 1, delta: 1e-6}
tables:
  - name: o
    source: %s
    primary_key: [o_a, o_b]
    columns: {o_a: {type: key}, o_b: {type: key}, o_cat: {type: categorical, values: [x]}}
release: {columns: [o_cat]}
`, src)), filepath.Join(dir, "s.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		h, err := s.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		inc, err := e.increasingKey(ctx, e.d.ident("o"), []string{e.d.ident("o_a") + " AS " + e.d.ident("k0"), e.d.ident("o_b") + " AS " + e.d.ident("k1")}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if inc && bad {
			t.Fatalf("instance %d (%s): the fast path passes keys with a duplicate or a NULL: %v", i, kind, keys)
		}
		if increasing && !null && !inc {
			t.Fatalf("instance %d (%s): the fast path refuses strictly increasing keys %v", i, kind, keys)
		}
		err = e.CheckPrimaryKey(ctx, h, "o", []string{"o_a", "o_b"})
		var dk *DuplicateKeyError
		switch {
		case !bad && err != nil:
			t.Fatalf("instance %d (%s): unique keys %v: %v", i, kind, keys, err)
		case !bad:
		case !errors.As(err, &dk):
			t.Fatalf("instance %d (%s): keys %v: error %v, want a DuplicateKeyError", i, kind, keys, err)
		case dk.Null != (dk.Value[0] == "NULL" || dk.Value[1] == "NULL"):
			t.Fatalf("instance %d (%s): error fields %q, Null %v", i, kind, dk.Value, dk.Null)
		case !dk.Null && (dk.Count < 2 || int64(count[key{dk.Value[0], dk.Value[1]}]) != dk.Count):
			t.Fatalf("instance %d (%s): error fields %q × %d, want a repeated key and its count; keys %v", i, kind, dk.Value, dk.Count, keys)
		}
	}
}
