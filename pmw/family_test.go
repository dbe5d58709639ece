package pmw

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// naiveQueries enumerates every query of a family as a dense vector over
// the universe, straight from the definitions (no projections, no boxes):
// the O(|X|·|Q|) reference.
func naiveQueries(t *testing.T, u *Universe, f Family) [][]float64 {
	t.Helper()
	n := u.Len()
	enc := func(d []int, cols []int) int {
		k := 0
		for _, c := range cols {
			k = k*u.sizes[c] + d[c]
		}
		return k
	}
	prod := func(cols []int) int {
		p := 1
		for _, c := range cols {
			p *= u.sizes[c]
		}
		return p
	}
	var qs [][]float64
	alloc := func(k int) {
		qs = make([][]float64, k)
		for i := range qs {
			qs[i] = make([]float64, n)
		}
	}
	d := make([]int, len(u.sizes))
	switch f := f.(type) {
	case *MarginalFamily:
		alloc(prod(f.cols))
		for x := range n {
			u.Decode(x, d)
			qs[enc(d, f.cols)][x] = 1
		}
	case *RangeFamily:
		nc := u.sizes[f.col]
		pairs := nc * (nc + 1) / 2
		alloc(prod(f.by) * pairs)
		for x := range n {
			u.Decode(x, d)
			k := 0
			for lo := 0; lo < nc; lo++ {
				for hi := lo; hi < nc; hi++ {
					if lo <= d[f.col] && d[f.col] <= hi {
						qs[enc(d, f.by)*pairs+k][x] = 1
					}
					k++
				}
			}
		}
	case *WeightedFamily:
		alloc(prod(f.cols))
		for x := range n {
			u.Decode(x, d)
			qs[enc(d, f.cols)][x] = f.wt[enc(d, f.wcols)]
		}
	case *LinearFamily:
		alloc(len(f.qs))
		for i, q := range f.qs {
			for _, tm := range q.Terms {
				qs[i][tm.Cell] = tm.Value
			}
		}
	default:
		t.Fatalf("unknown family %T", f)
	}
	return qs
}

func dot(q, a []float64) float64 {
	var s float64
	for x, v := range q {
		s += v * a[x]
	}
	return s
}

// randomCase draws a small random universe and one family of each kind.
func randomCase(rng *rand.Rand, maxSize int) (*Universe, []Family) {
	m := 2 + rng.IntN(3)
	names, sizes := make([]string, m), make([]int, m)
	for c := range m {
		names[c] = fmt.Sprintf("c%d", c)
		sizes[c] = 1 + rng.IntN(maxSize)
	}
	u, err := NewUniverse(names, sizes, 0)
	if err != nil {
		panic(err)
	}
	perm := rng.Perm(m)
	k := 1 + rng.IntN(m)
	cols := perm[:k]
	col := perm[0]
	by := perm[1 : 1+rng.IntN(m)]
	wcols := rng.Perm(m)[:1+rng.IntN(2)]
	wsize := 1
	for _, c := range wcols {
		wsize *= sizes[c]
	}
	wt := make([]float64, wsize)
	for i := range wt {
		wt[i] = 2*rng.Float64() - 1
	}
	var lqs []LinearQuery
	for i := range 5 {
		var terms []Term
		for _, x := range rng.Perm(int(u.Len()))[:1+rng.IntN(int(min(u.Len(), 6)))] {
			terms = append(terms, Term{Cell: int64(x), Value: 2*rng.Float64() - 1})
		}
		lqs = append(lqs, LinearQuery{Name: fmt.Sprintf("q%d", i), Terms: terms})
	}
	return u, []Family{
		Marginal(cols),
		Range(col, by),
		Weighted(perm[:rng.IntN(m)], wcols, wt),
		Linear(lqs),
	}
}

func randomVector(rng *rand.Rand, n int64) []float64 {
	a := make([]float64, n)
	for i := range a {
		a[i] = 0.1 + rng.Float64()
	}
	return a
}

// TestFamiliesMatchNaive checks Answer, Each, sum and update of all four
// families against the dense O(|X|·|Q|) reference on random universes.
func TestFamiliesMatchNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const tol = 1e-9
	for trial := range 60 {
		u, fams := randomCase(rng, 5)
		a := randomVector(rng, u.Len())
		for _, f := range fams {
			q, err := f.Bind(u)
			if err != nil {
				t.Fatalf("trial %d: bind: %v", trial, err)
			}
			ref := naiveQueries(t, u, f)
			if q.Len() != len(ref) {
				t.Fatalf("trial %d %s: Len = %d, naive %d", trial, q.Name(), q.Len(), len(ref))
			}
			out := make([]float64, q.Len())
			q.Answer(a, out)
			for i := range ref {
				want := dot(ref[i], a)
				if math.Abs(out[i]-want) > tol {
					t.Fatalf("trial %d %s: Answer[%d] = %v, naive %v", trial, q.Describe(i), i, out[i], want)
				}
				if got := q.sum(a, i); math.Abs(got-want) > tol {
					t.Fatalf("trial %d %s: sum = %v, naive %v", trial, q.Describe(i), got, want)
				}
				dense := make([]float64, u.Len())
				q.Each(i, func(x int64, v float64) { dense[x] += v })
				for x := range dense {
					if math.Abs(dense[x]-ref[i][x]) > tol {
						t.Fatalf("trial %d %s: Each gives q(%d) = %v, naive %v", trial, q.Describe(i), x, dense[x], ref[i][x])
					}
				}
				var nsup int64
				q.runs(i, func(_, _ int64, n int, _ []int, _ int) { nsup += int64(n) })
				if nsup != q.supportSize(i) {
					t.Fatalf("trial %d %s: runs visit %d cells, supportSize %d", trial, q.Describe(i), nsup, q.supportSize(i))
				}
			}
			// Update of a random query against the dense formula.
			i := rng.IntN(q.Len())
			eta, r := 2*rng.Float64()-1, rng.Float64()
			w, s := append([]float64(nil), a...), randomVector(rng, u.Len())
			s0 := append([]float64(nil), s...)
			dz := q.update(w, s, i, eta, r)
			var wantDz float64
			for x := range a {
				wn := a[x] * math.Exp(eta*ref[i][x])
				wantDz += wn - a[x]
				if math.Abs(w[x]-wn) > tol || math.Abs(s[x]-(s0[x]+(a[x]-wn)*r)) > tol {
					t.Fatalf("trial %d %s: update at %d: w = %v want %v, s = %v want %v",
						trial, q.Describe(i), x, w[x], wn, s[x], s0[x]+(a[x]-wn)*r)
				}
			}
			if math.Abs(dz-wantDz) > tol {
				t.Fatalf("trial %d %s: update dz = %v, want %v", trial, q.Describe(i), dz, wantDz)
			}
		}
	}
}

// TestFusedPassMatchesNaive answers all families in the engine's fused
// pass (several tables at once, one and two workers, universes small and
// large enough to split) and patches the tables incrementally after
// updates; both must match the naive reference.
func TestFusedPassMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 12 {
		var u *Universe
		var fams []Family
		if trial == 2 {
			// Large enough for the two-worker split.
			var err error
			u, err = NewUniverse([]string{"a", "b", "c", "d", "e", "f"}, []int{8, 11, 13, 3, 5, 4}, 0)
			if err != nil {
				t.Fatal(err)
			}
			fams = []Family{Marginal([]int{0, 1}), Marginal([]int{4, 5}), Marginal([]int{5, 2}),
				Range(3, []int{1}), Weighted([]int{2}, []int{4, 3}, randomVector(rng, 15)[:15]),
				Marginal(nil), Marginal([]int{1, 0})}
			for i := range 15 {
				fams[4].(*WeightedFamily).wt[i] -= 0.6
			}
		} else {
			u, fams = randomCase(rng, 6)
			fams = append(fams, Marginal([]int{0}), Marginal(nil))
		}
		for _, workers := range []int{1, 2} {
			e, err := newEngine(constSource{}, u, fams, Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.init(nil); err != nil {
				t.Fatal(err)
			}
			e.w = randomVector(rng, u.Len())
			refs := make([][][]float64, len(fams))
			for fi, f := range fams {
				refs[fi] = naiveQueries(t, u, f)
			}
			check := func(stage string) {
				t.Helper()
				e.answers()
				for fi := range fams {
					ref := refs[fi]
					for i := range ref {
						want := dot(ref[i], e.w)
						got := e.ans[e.famOff[fi]+i]
						if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
							t.Fatalf("trial %d workers %d %s: %s = %v, naive %v", trial, workers, stage, e.fams[fi].Describe(i), got, want)
						}
					}
				}
				var z float64
				for _, v := range e.w {
					z += v
				}
				if math.Abs(e.z-z) > 1e-9*z {
					t.Fatalf("trial %d %s: Z = %v, want %v", trial, stage, e.z, z)
				}
			}
			check("full pass")
			e.nhat = 100
			for step := range 4 {
				fi := rng.IntN(len(fams))
				qi := rng.IntN(e.fams[fi].Len())
				e.apply(e.fams[fi], qi, 100*rng.Float64(), 50)
				check(fmt.Sprintf("after update %d (incremental=%v)", step, e.fresh))
			}
		}
	}
}

// TestBindErrors checks that families refuse bad columns and values.
func TestBindErrors(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b"}, []int{3, 4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    Family
	}{
		{"marginal column out of range", Marginal([]int{2})},
		{"marginal negative column", Marginal([]int{-1})},
		{"marginal duplicate column", Marginal([]int{0, 0})},
		{"range col among by", Range(1, []int{1})},
		{"weighted wrong weight count", Weighted([]int{0}, []int{1}, []float64{1, 1})},
		{"weighted weight above 1", Weighted([]int{0}, []int{1}, []float64{1, 1, 1, 1.5})},
		{"weighted NaN weight", Weighted(nil, []int{0}, []float64{0, math.NaN(), 0})},
		{"linear cell out of range", Linear([]LinearQuery{{Terms: []Term{{Cell: 12, Value: 1}}}})},
		{"linear value out of range", Linear([]LinearQuery{{Terms: []Term{{Cell: 1, Value: -2}}}})},
		{"linear duplicate cell", Linear([]LinearQuery{{Terms: []Term{{Cell: 1, Value: 1}, {Cell: 1, Value: 0.5}}}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.f.Bind(u); err == nil {
				t.Fatal("Bind succeeded, want an error")
			}
		})
	}
}
