package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// TestDecimalTextOrder checks decimalTextOrder against sorting the decimal
// texts themselves, on hand-picked and random sets of distinct integers,
// given sorted (as the engine returns them) and shuffled.
func TestDecimalTextOrder(t *testing.T) {
	edge := []int64{0, 1, -1, 9, 10, -9, -10, 11, 99, 100, 101, -100, -99, 2, -2, 19, 20,
		math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
		999999999999999999, 1000000000000000000, -999999999999999999, -1000000000000000000}
	rng := rand.New(rand.NewPCG(1, 2))
	sets := map[string][]int64{
		"empty":    nil,
		"one":      {42},
		"zero":     {0},
		"negative": {-5},
		"edge":     edge,
	}
	for n := range 200 {
		seen := map[int64]bool{}
		var vs []int64
		for range rng.IntN(60) + 1 {
			var v int64
			switch rng.IntN(4) {
			case 0:
				v = rng.Int64N(2001) - 1000
			case 1:
				v = int64(rng.Uint64()) // any int64
			case 2:
				v = edge[rng.IntN(len(edge))]
			default: // a power of ten, ±, ±1
				v = int64(pow10[rng.IntN(19)]) + rng.Int64N(3) - 1
				if rng.IntN(2) == 0 {
					v = -v
				}
			}
			if !seen[v] {
				seen[v] = true
				vs = append(vs, v)
			}
		}
		sets["random "+strconv.Itoa(n)] = vs
	}
	for name, vs := range sets {
		want := make([]string, len(vs))
		for i, v := range vs {
			want[i] = strconv.FormatInt(v, 10)
		}
		slices.Sort(want)
		sorted := slices.Clone(vs)
		slices.Sort(sorted)
		shuffled := slices.Clone(vs)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, in := range [][]int64{sorted, shuffled} {
			order := decimalTextOrder(in)
			got := make([]string, len(order))
			for k, i := range order {
				got[k] = strconv.FormatInt(in[i], 10)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: decimalTextOrder(%v) gives %q, want %q", name, in, got, want)
			}
		}
	}
}

// TestDegreesTextOrder checks that Degrees returns the same list — labels,
// counts and text order — for an integer attribute (grouped and sorted as
// BIGINT, labelled in Go) as the statement labelling and sorting by text
// in the engine (degreeSQL), and as counting the labels here.
func TestDegreesTextOrder(t *testing.T) { forEachOpener(t, testDegreesTextOrder) }

func testDegreesTextOrder(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	e := openTest(t)
	dir := t.TempDir()
	keys := []string{"7", "10", "-3", "100", "-25", "0", "9", "-3", "10", "10", "123456789012345678",
		"-123456789012345678", "2", "19", "-1", "-10", "1000", "", "99"}
	ints := []string{"-1000", "5", "50", "-5", "-50", "0", "1", "12", "120", "-12", "5", "-1000", "3", "30", "300", "-3", "1", "1", "999"}
	var rows [][]string
	for i := range keys {
		rows = append(rows, []string{keys[i], ints[i]})
	}
	src := writeCSV(t, dir, "b.csv", []string{"k", "n"}, rows)
	s := &spec.Spec{Tables: []spec.Table{{Name: "b", Source: src, Columns: []spec.Column{
		{Name: "k", Type: spec.Key},
		{Name: "n", Type: spec.Integer, Min: -1000, Max: 1000},
	}}}}
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	h, err := hypergraph.New([]hypergraph.Relation{{Name: "b", Attrs: map[string]string{"K": "k", "N": "n"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		attr   string
		values []string
	}{{"K", keys}, {"N", ints}} {
		types, err := e.columnTypes(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		if typ := types[h.Relation(0).Attrs[tc.attr]]; typ != "BIGINT" {
			t.Fatalf("%s is %s, want BIGINT (the integer path)", tc.attr, typ)
		}
		got, err := e.Degrees(ctx, h, 0, []string{tc.attr})
		if err != nil {
			t.Fatal(err)
		}
		// Counting the labels here.
		count := map[string]int64{}
		for _, v := range tc.values {
			if v != "" {
				count[v]++
			}
		}
		var want []Degree
		for _, v := range slices.Sorted(func(yield func(string) bool) {
			for v := range count {
				if !yield(v) {
					return
				}
			}
		}) {
			want = append(want, Degree{Values: []string{v}, Count: count[v]})
		}
		same := func(a, b Degree) bool { return a.Count == b.Count && slices.Equal(a.Values, b.Values) }
		if !slices.EqualFunc(got, want, same) {
			t.Errorf("Degrees(%s) = %v, want %v", tc.attr, got, want)
		}
		// The engine's text labels, sorted by the engine.
		q, err := degreeSQL(e.d, h, 0, []string{tc.attr}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var text []Degree
		for r.Next() {
			d := Degree{Values: make([]string, 1)}
			if err := r.Scan(&d.Values[0], &d.Count); err != nil {
				t.Fatal(err)
			}
			text = append(text, d)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, text, same) {
			t.Errorf("Degrees(%s) = %v, the engine's text order gives %v", tc.attr, got, text)
		}
	}
	// Two attributes keep the engine's text path; the order is by K's
	// text, then N's.
	got, err := e.Degrees(ctx, h, 0, []string{"K", "N"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(got, func(a, b Degree) int { return slices.Compare(a.Values, b.Values) }) || len(got) == 0 {
		t.Errorf("Degrees(K, N) = %v, want sorted by text", got)
	}
}

// BenchmarkIntDegreeList times labelling and ordering 1.5 million
// integer degrees (TPC-H SF 1's l_orderkey: distinct keys below 6·10⁶,
// sorted), the work [Engine.Degrees] adds in Go to the engine's GROUP BY.
func BenchmarkIntDegreeList(b *testing.B) {
	const n = 1_500_000
	vals := make([]int64, n)
	counts := make([]int64, n)
	for i := range vals {
		vals[i] = int64(4*i + 1)
		counts[i] = int64(i%7 + 1)
	}
	for b.Loop() {
		intDegreeList(vals, counts)
	}
}
