package release

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSystematic checks the rounding on hand-made weights: the counts add
// up to n and each is the floor or the ceiling of n·w/Σw, whatever the
// uniform offset.
func TestSystematic(t *testing.T) {
	cases := []struct {
		w []float64
		n int64
	}{
		{[]float64{1, 1, 1}, 10},
		{[]float64{0.5, 0, 2.5, 1}, 7},
		{[]float64{1e-9, 1, 1e-9}, 3},
		{[]float64{3}, 5},
		{[]float64{0.1, 0.2, 0.3, 0.4}, 0},
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		var tot float64
		for _, v := range tc.w {
			tot += v
		}
		for range 200 {
			got := systematic(rnd, tc.w, tc.n)
			var sum int64
			for y, k := range got {
				sum += k
				e := float64(tc.n) * tc.w[y] / tot
				if float64(k) < math.Floor(e)-1e-9 || float64(k) > math.Ceil(e)+1e-9 {
					t.Fatalf("w %v n %d: count %d of cell %d, expectation %g", tc.w, tc.n, k, y, e)
				}
			}
			if sum != tc.n {
				t.Fatalf("w %v n %d: counts %v add up to %d", tc.w, tc.n, got, sum)
			}
		}
	}
}

// TestRounderCarry splits children context by context and checks what
// the draw promises: every context gets exactly its children, a cell the
// model gives no weight in a context gets none there, and each own cell's
// total over all contexts stays within 2 rows of its expectation (the
// carry), where independent draws would be off by about √(expectation)
// (here ~10 rows: the check would fail for them with probability ≈ 1).
func TestRounderCarry(t *testing.T) {
	const nc, no = 400, 6
	rnd := rand.New(rand.NewPCG(3, 4))
	joint := make([]float64, nc*no)
	for c := range nc {
		for y := range no {
			if (c+y)%5 != 0 { // some structural zeros
				joint[c*no+y] = rnd.Float64()
			}
		}
	}
	for trial := range 20 {
		rd := newRounder(joint, nc, no)
		want := make([]float64, no)
		got := make([]float64, no)
		for c := int64(0); c < nc; c++ {
			n := rnd.Int64N(12)
			ys := rd.split(rnd, c, n)
			if int64(len(ys)) != n {
				t.Fatalf("trial %d: context %d: %d cells for %d children", trial, c, len(ys), n)
			}
			var tot float64
			for y := range int64(no) {
				tot += joint[c*no+y]
			}
			for y := range int64(no) {
				want[y] += float64(n) * joint[c*no+y] / tot
			}
			for _, y := range ys {
				if joint[c*no+int64(y)] == 0 {
					t.Fatalf("trial %d: context %d: a child drawn in cell %d, which has no weight there", trial, c, y)
				}
				got[y]++
			}
		}
		for y := range no {
			if math.Abs(got[y]-want[y]) > 2 {
				t.Fatalf("trial %d: own cell %d: %g children over all contexts, expected %.2f", trial, y, got[y], want[y])
			}
		}
	}
}

// TestSpread checks that a fan-out bin's values are used evenly: each of
// the k values about n/k times.
func TestSpread(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ k, n int64 }{{1, 9}, {4, 10}, {8, 3}, {16, 1000}} {
		got := spread(rnd, tc.k, tc.n)
		if int64(len(got)) != tc.n {
			t.Fatalf("k %d n %d: %d values", tc.k, tc.n, len(got))
		}
		cnt := make([]int64, tc.k)
		for _, v := range got {
			if v < 0 || int64(v) >= tc.k {
				t.Fatalf("k %d n %d: value %d out of range", tc.k, tc.n, v)
			}
			cnt[v]++
		}
		for v, c := range cnt {
			if c < tc.n/tc.k || c > (tc.n+tc.k-1)/tc.k {
				t.Fatalf("k %d n %d: value %d used %d times", tc.k, tc.n, v, c)
			}
		}
	}
}
