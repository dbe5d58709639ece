package rangeset

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// maxClique is the brute-force maximum clique of the intersection graph of
// the boxes (n ≤ 20): every subset, largest first.
func maxClique(boxes []Box) int {
	n := len(boxes)
	adj := make([]uint32, n)
	for i := range boxes {
		if boxes[i].Empty() {
			continue
		}
		adj[i] |= 1 << i
		for j := range boxes {
			if i != j && !boxes[j].Empty() && boxes[i].Intersects(boxes[j]) {
				adj[i] |= 1 << j
			}
		}
	}
	best := 0
	for set := uint32(1); set < 1<<n; set++ {
		k := bits.OnesCount32(set)
		if k <= best {
			continue
		}
		ok := true
		for i := 0; i < n && ok; i++ {
			if set&(1<<i) != 0 && adj[i]&set != set {
				ok = false
			}
		}
		if ok {
			best = k
		}
	}
	return best
}

// randomInterval draws an interval with endpoints on a small grid (so that
// endpoints collide), open or closed at random, sometimes unbounded.
func randomInterval(r *rand.Rand) Interval {
	a, b := float64(r.IntN(8)), float64(r.IntN(8))
	if a > b {
		a, b = b, a
	}
	iv := Interval{Lo: Bound{V: a}, Hi: Bound{V: b}}
	if r.IntN(4) == 0 {
		iv.Lo.Tick = 1
	}
	if r.IntN(4) == 0 {
		iv.Hi.Tick = -1
	}
	if r.IntN(10) == 0 {
		iv.Lo = Bound{V: math.Inf(-1)}
	}
	if r.IntN(10) == 0 {
		iv.Hi = Bound{V: math.Inf(1)}
	}
	return iv
}

// TestMaxDepthEqualsMaxClique checks the sweep against the brute-force
// maximum clique on 1,000 random sets of 1–14 boxes in 1–5 dimensions
// (open, closed and unbounded ends, empty boxes included). Equality is
// the Helly property of boxes (Inan et al. Thm. 3) together with the
// sweep's exactness.
func TestMaxDepthEqualsMaxClique(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for trial := 0; trial < 1000; trial++ {
		dims := 1 + r.IntN(5)
		boxes := make([]Box, 1+r.IntN(14))
		for i := range boxes {
			boxes[i] = make(Box, dims)
			for d := range boxes[i] {
				boxes[i][d] = randomInterval(r)
			}
		}
		if got, want := MaxDepth(boxes), maxClique(boxes); got != want {
			t.Fatalf("trial %d (%d boxes, %d dims): max depth %d, max clique %d\n%v", trial, len(boxes), dims, got, want, boxes)
		}
	}
}

// TestMaxDepthCases pins small cases: touching closed intervals meet,
// touching open ones do not, nesting, and the empty set.
func TestMaxDepthCases(t *testing.T) {
	closed := func(a, b float64) Interval { return Interval{Bound{a, 0}, Bound{b, 0}} }
	open := func(a, b float64) Interval { return Interval{Bound{a, 1}, Bound{b, -1}} }
	for _, tc := range []struct {
		name  string
		boxes []Box
		want  int
	}{
		{"none", nil, 0},
		{"touching closed", []Box{{closed(0, 1)}, {closed(1, 2)}}, 2},
		{"touching open", []Box{{closed(0, 1)}, {open(1, 2)}}, 1},
		{"empty box", []Box{{open(1, 1)}, {closed(0, 2)}}, 1},
		{"nested 2-D", []Box{{closed(0, 9), closed(0, 9)}, {closed(1, 2), closed(1, 2)}, {closed(2, 3), closed(2, 3)}}, 3},
		{"cross 2-D", []Box{{closed(0, 9), closed(4, 5)}, {closed(4, 5), closed(0, 9)}, {closed(6, 7), closed(6, 7)}}, 2},
		{"full", []Box{{Full, Full}, {Full, closed(3, 3)}}, 2},
	} {
		if got := MaxDepth(tc.boxes); got != tc.want {
			t.Errorf("%s: max depth %d, want %d", tc.name, got, tc.want)
		}
	}
}

// randomQueries draws n random 5-D range queries as in Inan et al. §5.2:
// per dimension a random sub-range of a domain of 100 values (integer
// columns, closed ends).
func randomQueries(r *rand.Rand, n, dims int) []Box {
	out := make([]Box, n)
	for i := range out {
		out[i] = make(Box, dims)
		for d := range out[i] {
			a, b := float64(r.IntN(100)), float64(r.IntN(100))
			if a > b {
				a, b = b, a
			}
			out[i][d] = Interval{Bound{a, 0}, Bound{b, 0}}
		}
	}
	return out
}

// BenchmarkMaxDepth is Inan et al.'s §5.2 scale: 2,000 random 5-D range
// queries (the issue asks for < 1 s).
func BenchmarkMaxDepth(b *testing.B) {
	boxes := randomQueries(rand.New(rand.NewPCG(1, 1)), 2000, 5)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		MaxDepth(boxes)
	}
}
