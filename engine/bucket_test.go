package engine

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// TestBucketsBruteForce loads random two-table instances joined on two
// attributes (a, b), checks the degrees of NewBuckets against a brute-force
// count, assigns random buckets, and checks that every bucket's views hold
// exactly the tuples of its values: their max degrees and histograms equal
// the brute-force ones, and the histograms add up to the whole join's.
func TestBucketsBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(stattest.Seed(t), 5))
	ctx := context.Background()
	for it := range 25 {
		dir := t.TempDir()
		type tup struct{ a, b, x int }
		var rels [2][]tup
		for r := range 2 {
			n := rng.IntN(30)
			for range n {
				rels[r] = append(rels[r], tup{rng.IntN(3), rng.IntN(3), rng.IntN(2)})
			}
		}
		var yml strings.Builder
		fmt.Fprintf(&yml, "privacy: {epsilon: 1, delta: 1e-6}\ntables:\n")
		for r := range 2 {
			var rows [][]string
			for _, tp := range rels[r] {
				rows = append(rows, []string{fmt.Sprint(tp.a), fmt.Sprintf("k%d", tp.b), []string{"u", "v"}[tp.x]})
			}
			writeCSV(t, dir, fmt.Sprintf("r%d.csv", r+1), []string{"a", "b", "x"}, rows)
			fmt.Fprintf(&yml, "  - name: r%d\n    source: r%d.csv\n    columns:\n      a: {type: key}\n      b: {type: key}\n      x: {type: categorical, values: [u, v]}\n", r+1, r+1)
		}
		yml.WriteString("join: [r1.a = r2.a, r1.b = r2.b]\nrelease:\n  columns: [r1.x, r2.x]\noutput: {path: out}\n")
		s, err := spec.Parse([]byte(yml.String()), dir+"/synth.yaml")
		if err != nil {
			t.Fatal(err)
		}
		// In memory: the buckets' tables and views are the same as in the
		// default engine's file, without writing them to disk.
		e := openMemoryTest(t)
		oneThread(t, e)
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		h, err := s.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		attrs := h.Boundary(1)
		b, degs, err := e.NewBuckets(ctx, h, attrs)
		if err != nil {
			t.Fatal(err)
		}
		// Brute force: values sorted by (a, text b) — the engine orders by
		// the stored values, a BIGINT and a text.
		type key struct{ a, b int }
		var cnt [2]map[key]int64
		all := map[key]bool{}
		for r := range 2 {
			cnt[r] = map[key]int64{}
			for _, tp := range rels[r] {
				cnt[r][key{tp.a, tp.b}]++
				all[key{tp.a, tp.b}] = true
			}
		}
		vals := slices.SortedFunc(maps.Keys(all), func(p, q key) int {
			if p.a != q.a {
				return p.a - q.a
			}
			return p.b - q.b
		})
		if len(degs) != len(vals) {
			t.Fatalf("instance %d: %d degrees, want %d", it, len(degs), len(vals))
		}
		for k, v := range vals {
			if want := max(cnt[0][v], cnt[1][v]); degs[k] != want {
				t.Fatalf("instance %d: degree of %v = %d, want %d", it, v, degs[k], want)
			}
		}
		bucket := make([]int32, len(vals))
		of := map[key]int32{}
		for k, v := range vals {
			bucket[k] = int32(1 + rng.IntN(3))
			of[v] = bucket[k]
		}
		if err := b.Assign(ctx, bucket); err != nil {
			t.Fatal(err)
		}
		whole, err := e.Histogram(ctx, h, s.Release.Columns, []int{2, 2})
		if err != nil {
			t.Fatal(err)
		}
		sum := map[int64]int64{}
		for i := 1; i <= 3; i++ {
			bh, err := b.Bucket(ctx, i)
			if err != nil {
				t.Fatal(err)
			}
			cols := []spec.ColumnRef{{Table: bh.Relation(0).Name, Column: "x"}, {Table: bh.Relation(1).Name, Column: "x"}}
			cells, err := e.Histogram(ctx, bh, cols, []int{2, 2})
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]int64{}
			for _, p := range rels[0] {
				for _, q := range rels[1] {
					if p.a == q.a && p.b == q.b && of[key{p.a, p.b}] == int32(i) {
						want[int64(p.x*2+q.x)]++
					}
				}
			}
			got := map[int64]int64{}
			for _, c := range cells {
				got[c.Index] = c.Count
				sum[c.Index] += c.Count
			}
			if !maps.Equal(got, want) {
				t.Fatalf("instance %d bucket %d: histogram %v, want %v", it, i, got, want)
			}
			for r := range 2 {
				md, err := e.MaxDegree(ctx, bh, r, attrs)
				if err != nil {
					t.Fatal(err)
				}
				var wantMD int64
				for v, c := range cnt[r] {
					if of[v] == int32(i) {
						wantMD = max(wantMD, c)
					}
				}
				if md != wantMD {
					t.Fatalf("instance %d bucket %d: max degree of r%d = %d, want %d", it, i, r+1, md, wantMD)
				}
			}
		}
		wholeM := map[int64]int64{}
		for _, c := range whole {
			wholeM[c.Index] = c.Count
		}
		if !maps.Equal(sum, wholeM) {
			t.Fatalf("instance %d: buckets' histograms add up to %v, the join's is %v", it, sum, wholeM)
		}
		if err := b.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		var left int64
		if err := e.db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '"+bucketPrefix+"%'").Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Fatalf("instance %d: %d bucket tables or views left after Drop", it, left)
		}
	}
}
