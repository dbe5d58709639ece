package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// TestHierPartition checks the engine side of a hierarchical partition on
// r1(a, b) ⋈ r2(a, b) ⋈ r3(a) with a hand-computed instance: the degrees
// of one relation (tuples with multiplicity) and of two (distinct (a, b)
// of their join), the views of a split's buckets (bucket 1 keeps every
// value not assigned, NULLs included), the refusals, and that Drop
// removes every view and table.
func TestHierPartition(t *testing.T) { forEachOpener(t, testHierPartition) }

func testHierPartition(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	dir := t.TempDir()
	writeCSV(t, dir, "r1.csv", []string{"a", "b", "x"}, [][]string{{"1", "1", "u"}, {"1", "2", "u"}, {"1", "2", "u"}, {"2", "1", "u"}, {"", "1", "u"}})
	writeCSV(t, dir, "r2.csv", []string{"a", "b", "x"}, [][]string{{"1", "1", "u"}, {"1", "2", "u"}, {"2", "3", "u"}})
	writeCSV(t, dir, "r3.csv", []string{"a", "x"}, [][]string{{"1", "u"}, {"2", "u"}})
	y := `privacy: {epsilon: 1, delta: 1e-6}
tables:
  - {name: r1, source: r1.csv, columns: {a: {type: key}, b: {type: key}, x: {type: categorical, values: [u]}}}
  - {name: r2, source: r2.csv, columns: {a: {type: key}, b: {type: key}, x: {type: categorical, values: [u]}}}
  - {name: r3, source: r3.csv, columns: {a: {type: key}, x: {type: categorical, values: [u]}}}
join: [r1.a = r2.a, r1.b = r2.b, r1.a = r3.a]
release: {columns: [r1.x]}
output: {path: out}
`
	s, err := spec.Parse([]byte(y), dir+"/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, h := loadTest(t, s)
	a, b := "r1.a", "r1.b"
	p, err := e.NewHierPartition(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	// deg_{r1, a}: a=1 → 3 tuples, a=2 → 1 (the NULL row is left out).
	s0, degs, err := p.Degrees(ctx, 1, []string{a}, []string{a, b}, nil)
	if err != nil || s0 != 0 || !slices.Equal(degs, []int64{3, 1}) {
		t.Fatalf("one relation: split %d, degrees %v, %v", s0, degs, err)
	}
	// deg_{r1r2, a}: distinct (a, b) in r1 ⋈ r2: a=1 → {(1,1), (1,2)}, a=2 → none.
	s1, degs, err := p.Degrees(ctx, 3, []string{a}, []string{a, b}, nil)
	if err != nil || s1 != 1 || !slices.Equal(degs, []int64{2}) {
		t.Fatalf("two relations: split %d, degrees %v, %v", s1, degs, err)
	}
	if _, err := p.Sub(ctx, 0, []HierFilter{{Rels: 3, Attrs: []string{a}, Split: s1, Bucket: 2}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("filter on an unassigned split: %v", err)
	}
	if err := p.Assign(ctx, s1, map[int64]int{1: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bucket 1 listed: %v", err)
	}
	if err := p.Assign(ctx, s1, map[int64]int{1: 2}); err != nil { // a=1 in bucket 2
		t.Fatal(err)
	}
	if err := p.Assign(ctx, s1, map[int64]int{1: 2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("assigned twice: %v", err)
	}
	sizes := map[int][3]int64{}
	for _, bucket := range []int{1, 2} {
		sub, err := p.Sub(ctx, bucket, []HierFilter{{Rels: 3, Attrs: []string{a}, Split: s1, Bucket: bucket}})
		if err != nil {
			t.Fatal(err)
		}
		var n [3]int64
		for k := range 3 {
			one, _ := hypergraph.New([]hypergraph.Relation{sub.Relation(k)})
			if n[k], err = e.JoinSize(ctx, one); err != nil {
				t.Fatal(err)
			}
		}
		sizes[bucket] = n
	}
	// Bucket 2: a=1's tuples of r1, r2; r3 whole. Bucket 1: the rest
	// (a=2 and the NULL row of r1, a=2 of r2); r3 whole.
	if sizes[2] != [3]int64{3, 2, 2} || sizes[1] != [3]int64{2, 1, 2} {
		t.Errorf("view sizes by bucket %v", sizes)
	}
	count := func() int64 {
		var n int64
		if err := e.db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND starts_with(table_name, $1)", hierPrefix).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n == 0 {
		t.Fatal("no partition table or view found before Drop")
	}
	if err := p.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d tables or views left after Drop", n)
	}
}

// TestHierPartitionMixedStorage: a join attribute stored as BIGINT in the
// relations of a degree query (r1, r2) and as text in another (r3, which
// holds "07") compares as text everywhere, as the engine's other
// statistics do: r3's "07" is not the value 7 the assignment names, so it
// stays in bucket 1. Before the fix the filter compared r1 ⋈ r2's BIGINT
// with r3's text: DuckDB cast "07" to 7 (bucket 2) and PostgreSQL failed
// — whether the run succeeded depended on one tuple's spelling.
func TestHierPartitionMixedStorage(t *testing.T) {
	forEachOpener(t, func(t *testing.T, openTest func(testing.TB) *Engine) {
		ctx := context.Background()
		dir := t.TempDir()
		writeCSV(t, dir, "r1.csv", []string{"a", "b", "x"}, [][]string{{"7", "1", "u"}, {"7", "2", "u"}, {"8", "1", "u"}})
		writeCSV(t, dir, "r2.csv", []string{"a", "b", "x"}, [][]string{{"7", "1", "u"}, {"7", "2", "u"}, {"8", "1", "u"}})
		writeCSV(t, dir, "r3.csv", []string{"a", "x"}, [][]string{{"7", "u"}, {"07", "u"}, {"8", "u"}})
		y := `privacy: {epsilon: 1, delta: 1e-6}
tables:
  - {name: r1, source: r1.csv, columns: {a: {type: key}, b: {type: key}, x: {type: categorical, values: [u]}}}
  - {name: r2, source: r2.csv, columns: {a: {type: key}, b: {type: key}, x: {type: categorical, values: [u]}}}
  - {name: r3, source: r3.csv, columns: {a: {type: key}, x: {type: categorical, values: [u]}}}
join: [r1.a = r2.a, r1.b = r2.b, r1.a = r3.a]
release: {columns: [r1.x]}
output: {path: out}
`
		s, err := spec.Parse([]byte(y), dir+"/synth.yaml")
		if err != nil {
			t.Fatal(err)
		}
		e, h := loadTest(t, s)
		p, err := e.NewHierPartition(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Drop(ctx)
		a, b := "r1.a", "r1.b"
		split, degs, err := p.Degrees(ctx, 3, []string{a}, []string{a, b}, nil)
		if err != nil || !slices.Equal(degs, []int64{2, 1}) {
			t.Fatalf("degrees over r1 ⋈ r2: %v, %v; want [2 1] (a = 7, 8)", degs, err)
		}
		if err := p.Assign(ctx, split, map[int64]int{1: 2}); err != nil { // a = 7 in bucket 2
			t.Fatal(err)
		}
		got := map[int]int64{}
		for _, bucket := range []int{1, 2} {
			sub, err := p.Sub(ctx, bucket, []HierFilter{{Rels: 7, Attrs: []string{a}, Split: split, Bucket: bucket}})
			if err != nil {
				t.Fatalf("bucket %d: %v", bucket, err)
			}
			one, _ := hypergraph.New([]hypergraph.Relation{sub.Relation(2)})
			if got[bucket], err = e.JoinSize(ctx, one); err != nil {
				t.Fatal(err)
			}
		}
		if got[2] != 1 || got[1] != 2 {
			t.Errorf("r3 rows by bucket %v, want bucket 2: {7}, bucket 1: {07, 8}", got)
		}
	})
}
