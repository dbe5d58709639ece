package residual_test

import (
	"errors"
	"math"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/residual/internal/brute"
)

// TestLocalSensitivityAtAgainstDefinition compares the branch and bound
// with Def. 3.6 evaluated verbatim (every composition, every i, every E),
// on tables from random instances and on random tables with large values.
func TestLocalSensitivityAtAgainstDefinition(t *testing.T) {
	rng := newRand(t)
	check := func(te *residual.Table, h *hypergraph.Hypergraph, k int, what string) {
		t.Helper()
		got, err := residual.LocalSensitivityAt(te, h, k)
		if err != nil {
			t.Fatal(err)
		}
		want := defLocalSensitivity(te, h, k)
		if math.Abs(got-want) > 1e-12*want {
			t.Fatalf("%s: LŜ^%d = %v, want %v", what, k, got, want)
		}
	}
	for n := range 200 {
		in := brute.Random(rng, brute.Shapes[n%len(brute.Shapes)], 6, 0.2)
		h, err := in.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		te, err := residual.TE(t.Context(), h, &brute.Counter{In: in})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{0, 1, 2, 3, 5, 8, 13} {
			check(te, h, k, in.String())
		}
	}
	// Random tables on joins with up to 6 private relations (n = 5
	// variables), where the search tree is deep.
	shapes := []brute.Shape{
		{Name: "path6", Rels: []string{"A", "B", "C", "D", "E", "F"}, Attrs: [][]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}, {"e", "f"}, {"f", "g"}}},
		{Name: "star5", Rels: []string{"A", "B", "C", "D", "E"}, Attrs: [][]string{{"x", "a"}, {"x", "b"}, {"x", "c"}, {"x", "d"}, {"x", "e"}}},
		brute.Shapes[6], // cycle4
	}
	for n := range 60 {
		s := shapes[n%len(shapes)]
		in := brute.Random(rng, s, 0, 0.15)
		h, err := in.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		scale := []float64{3, 100, 1e9}[n%3]
		te := randomTable(t, rng, h, scale)
		for _, k := range []int{0, 1, 4, 9, 17} {
			check(te, h, k, s.Name)
		}
	}
}

// TestRSBoundsLocalSensitivity checks LS(I) ≤ LŜ^0 ≤ RS^β on 300 random
// instances, with LS the true local sensitivity over every single-tuple
// insertion and deletion in a private relation, and that RS and its argmax
// agree with the naive maximum over k < SearchLimit.
func TestRSBoundsLocalSensitivity(t *testing.T) {
	rng := newRand(t)
	positiveK := 0
	for n := range 300 {
		in := brute.Random(rng, brute.Shapes[n%len(brute.Shapes)], 6, 0.2)
		beta := betas[n%len(betas)]
		h, te, rs, k := compute(t, in, beta)
		ls := brute.LocalSensitivity(in)
		ls0, err := residual.LocalSensitivityAt(te, h, 0)
		if err != nil {
			t.Fatal(err)
		}
		if float64(ls) > ls0 || ls0 > rs {
			t.Fatalf("%s: LS = %d, LŜ^0 = %v, RS^%v = %v: want LS ≤ LŜ^0 ≤ RS", in, ls, ls0, beta, rs)
		}
		limit, err := residual.SearchLimit(h.Private().Len(), beta)
		if err != nil {
			t.Fatal(err)
		}
		best, arg := -1.0, -1
		for j := range limit {
			l, err := residual.LocalSensitivityAt(te, h, j)
			if err != nil {
				t.Fatal(err)
			}
			if g := math.Exp(-beta*float64(j)) * l; g > best*(1+1e-12) {
				best, arg = g, j
			}
		}
		if math.Abs(best-rs) > 1e-12*rs || arg != k {
			t.Fatalf("%s β=%v: RS = %v at k=%d, naive max %v at k=%d", in, beta, rs, k, best, arg)
		}
		if k > 0 {
			positiveK++
		}
	}
	if positiveK == 0 {
		t.Fatal("no instance had its maximum at k > 0: the search over k went untested")
	}
	t.Logf("%d of 300 instances had argmax k > 0", positiveK)
}

// TestRSSmooth checks RS^β(I′) ≤ e^β·RS^β(I) in both directions on random
// neighbours I′ of I (one tuple added to or removed from a private
// relation).
func TestRSSmooth(t *testing.T) {
	rng := newRand(t)
	for n := range 400 {
		in := brute.Random(rng, brute.Shapes[n%len(brute.Shapes)], 6, 0.2)
		next, err := brute.Neighbour(rng, in)
		if err != nil {
			t.Fatal(err)
		}
		beta := betas[n%len(betas)]
		_, _, rs, _ := compute(t, in, beta)
		_, _, rs2, _ := compute(t, next, beta)
		f := math.Exp(beta)
		if !atMost(rs2, f*rs) || !atMost(rs, f*rs2) {
			t.Fatalf("β=%v: RS(I) = %v, RS(I′) = %v, ratio beyond e^β = %v\nI  = %s\nI′ = %s", beta, rs, rs2, f, in, next)
		}
	}
}

// TestPublicRelations checks that public relations are left out of the
// neighbour relation but kept in the joins.
func TestPublicRelations(t *testing.T) {
	// R(A,B) has five tuples with B = 0 and public S(B,C) one. Changing S
	// would move the count by 5, but S is public: only R changes, by at
	// most deg_S(0) = 1, and RS^β = T_{S} = 1 for every β.
	in := &brute.Instance{Dom: 3, Rels: []brute.Relation{
		{Name: "R", Attrs: []string{"A", "B"}, Tuples: [][]int{{0, 0}, {1, 0}, {2, 0}, {0, 0}, {1, 0}}},
		{Name: "S", Attrs: []string{"B", "C"}, Public: true, Tuples: [][]int{{0, 1}}},
	}}
	for _, beta := range betas {
		_, _, rs, k := compute(t, in, beta)
		if rs != 1 || k != 0 {
			t.Fatalf("β=%v: RS = %v at k=%d, want 1 at 0", beta, rs, k)
		}
	}
	if ls := brute.LocalSensitivity(in); ls != 1 {
		t.Fatalf("LS over changes to R = %d, want 1", ls)
	}
	all := in.Clone()
	all.Rels[1].Public = false
	if ls := brute.LocalSensitivity(all); ls != 5 {
		t.Fatalf("LS over changes to R and S = %d, want 5", ls)
	}
	// Random instances where every relation but one may be public.
	rng := newRand(t)
	withPublic := 0
	for n := range 300 {
		in := brute.Random(rng, brute.Shapes[n%len(brute.Shapes)], 6, 0.5)
		h, _, rs, _ := compute(t, in, betas[n%len(betas)])
		if h.Private() != h.All() {
			withPublic++
		}
		if ls := brute.LocalSensitivity(in); float64(ls) > rs {
			t.Fatalf("%s: LS = %d > RS = %v", in, ls, rs)
		}
		// Declaring relations public can only lower RS.
		priv := in.Clone()
		for i := range priv.Rels {
			priv.Rels[i].Public = false
		}
		_, _, rsAll, _ := compute(t, priv, betas[n%len(betas)])
		if !atMost(rs, rsAll) {
			t.Fatalf("%s: RS with public relations %v > RS without %v", in, rs, rsAll)
		}
	}
	if withPublic < 100 {
		t.Fatalf("only %d instances had a public relation", withPublic)
	}
}

// TestSearchCutoff evaluates e^{−βk}·LŜ^k far beyond SearchLimit on random
// instances and tables and finds nothing above RS^β; it also checks the
// inequality LŜ^{k−1} ≥ (1 − n/k)·LŜ^k the cut-off proof rests on.
func TestSearchCutoff(t *testing.T) {
	rng := newRand(t)
	for n := range 120 {
		var h *hypergraph.Hypergraph
		var te *residual.Table
		in := brute.Random(rng, brute.Shapes[n%len(brute.Shapes)], 6, 0.2)
		h, err := in.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		if n%2 == 0 {
			te, err = residual.TE(t.Context(), h, &brute.Counter{In: in})
			if err != nil {
				t.Fatal(err)
			}
		} else {
			te = randomTable(t, rng, h, 1e6)
		}
		beta := betas[n%len(betas)]
		rs, k, err := residual.RS(te, h, beta)
		if err != nil {
			t.Fatal(err)
		}
		limit, err := residual.SearchLimit(h.Private().Len(), beta)
		if err != nil {
			t.Fatal(err)
		}
		if k >= limit {
			t.Fatalf("argmax %d ≥ limit %d", k, limit)
		}
		nv := float64(h.Private().Len() - 1)
		prev := 0.0
		for j := 0; j <= 4*limit+20; j++ {
			l, err := residual.LocalSensitivityAt(te, h, j)
			if err != nil {
				t.Fatal(err)
			}
			if g := math.Exp(-beta*float64(j)) * l; !atMost(g, rs) {
				t.Fatalf("%s β=%v: e^{−βk}·LŜ^k = %v at k=%d > RS = %v (limit %d)", in, beta, g, j, rs, limit)
			}
			if j > 0 && !atMost((1-nv/float64(j))*l, prev) {
				t.Fatalf("LŜ^%d = %v < (1 − %v/%d)·LŜ^%d = %v", j-1, prev, nv, j, j, l)
			}
			if j > 0 && !atMost(prev, l) {
				t.Fatalf("LŜ^k decreased: %v then %v", prev, l)
			}
			prev = l
		}
	}
}

func TestSearchLimit(t *testing.T) {
	tests := []struct {
		p    int
		beta float64
		want int
	}{
		{1, 0.1, 1},
		{2, 1, 2},                    // 1/(1−e^{−1}) = 1.58
		{3, 1 / math.Log(1e6), 29},   // 2/(1−e^{−0.0724}) = 28.6
		{4, 1 / math.Log(1e6), 43},   // 3/0.0698 = 42.9
		{4, 1 / 13.8, 43},            // 3/0.0699 = 42.9
		{2, 1e-3, 1001},              // 1/(1−e^{−0.001}) = 1000.5
		{16, 1 / math.Log(1e6), 215}, // 15/0.0698 = 214.7
	}
	for _, tc := range tests {
		got, err := residual.SearchLimit(tc.p, tc.beta)
		if err != nil || got != tc.want {
			t.Errorf("SearchLimit(%d, %v) = %d, %v; want %d", tc.p, tc.beta, got, err, tc.want)
		}
	}
	if _, err := residual.SearchLimit(4, 1e-6); !errors.Is(err, residual.ErrSearchTooLarge) {
		t.Errorf("SearchLimit(4, 1e-6): %v, want ErrSearchTooLarge", err)
	}
	if _, err := residual.SearchLimit(0, 1); !errors.Is(err, residual.ErrNoPrivate) {
		t.Errorf("SearchLimit(0, 1): %v, want ErrNoPrivate", err)
	}
}

func TestRSErrors(t *testing.T) {
	in := &brute.Instance{Dom: 2, Rels: []brute.Relation{
		{Name: "R", Attrs: []string{"A", "B"}, Tuples: [][]int{{0, 0}}},
		{Name: "S", Attrs: []string{"B", "C"}, Tuples: [][]int{{0, 1}}},
	}}
	h, te, _, _ := compute(t, in, 1)
	other, err := brute.Shapes[1].Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	pub := in.Clone()
	pub.Rels[0].Public, pub.Rels[1].Public = true, true
	hPub, err := pub.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		te   *residual.Table
		h    *hypergraph.Hypergraph
		beta float64
		want error
	}{
		{"zero β", te, h, 0, residual.ErrInvalidParameter},
		{"negative β", te, h, -1, residual.ErrInvalidParameter},
		{"NaN β", te, h, math.NaN(), residual.ErrInvalidParameter},
		{"+Inf β", te, h, math.Inf(1), residual.ErrInvalidParameter},
		{"-Inf β", te, h, math.Inf(-1), residual.ErrInvalidParameter},
		{"tiny β", te, h, 1e-9, residual.ErrSearchTooLarge},
		{"nil table", nil, h, 1, residual.ErrInvalidParameter},
		{"nil hypergraph", te, nil, 1, residual.ErrInvalidParameter},
		{"other hypergraph", te, other, 1, residual.ErrInvalidParameter},
		{"all public", te, hPub, 1, residual.ErrNoPrivate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := residual.RS(tc.te, tc.h, tc.beta); !errors.Is(err, tc.want) {
				t.Fatalf("RS: %v, want %v", err, tc.want)
			}
		})
	}
	for _, k := range []int{-1, residual.MaxK + 1} {
		if _, err := residual.LocalSensitivityAt(te, h, k); !errors.Is(err, residual.ErrInvalidParameter) {
			t.Errorf("LocalSensitivityAt(k=%d): %v, want ErrInvalidParameter", k, err)
		}
	}
	if _, err := residual.LocalSensitivityAt(te, hPub, 0); !errors.Is(err, residual.ErrNoPrivate) {
		t.Errorf("LocalSensitivityAt with all public: %v, want ErrNoPrivate", err)
	}
}
