package release

import (
	"math"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
	"github.com/synth-dp/synth/numerical"
)

// measureAuditMech runs measureDirect on one instance with the shares of
// the audit (the measure's ε 1: 0.4 to the total, 0.35 to the atoms) and
// returns the published total, or the first atom's sum.
func measureAuditMech(total int64, atoms []int64, mut measureMutation, atom bool) audit.Mechanism[float64] {
	return func(src dp.Source) float64 {
		t, a, err := measureDirect(src, total, atoms, 100, 0.4, 0.35, 1, mut)
		if err != nil {
			panic(err)
		}
		if atom {
			return float64(a[0])
		}
		return float64(t)
	}
}

// TestAuditMeasureDirect audits the direct measurements of a measure at
// their claimed shares on neighbours that add one tuple of the largest
// value (100 units, in atom 0): the total must be ε_T = 0.4-DP and the
// atoms' sums ε_A = 0.35-DP; each bound holds with confidence 1 − 10⁻⁶.
func TestAuditMeasureDirect(t *testing.T) {
	runs := 20_000
	if testing.Short() {
		runs = 5_000
	}
	for _, c := range []struct {
		name  string
		atom  bool
		claim float64
	}{{"total", false, 0.4}, {"atom", true, 0.35}} {
		res := audit.MustRunScalar(t, measureAuditMech(1000, []int64{600, 400}, measureMutNone, c.atom),
			measureAuditMech(1100, []int64{700, 400}, measureMutNone, c.atom), runs, 0)
		t.Logf("%s: ε ≥ %.3f (event %s)", c.name, res.EpsilonLowerBound, res.Event)
		if res.EpsilonLowerBound > c.claim {
			t.Errorf("%s: empirical ε lower bound %v > claimed %v (event %s)", c.name, res.EpsilonLowerBound, c.claim, res.Event)
		}
	}
}

// TestAuditMeasureMutant plants the bug of a total measured without its
// share of ε (its noise at the measure's whole ε = 1, while the ledger
// charges 0.4) and requires the audit to prove the claim ε_T = 0.4 false
// (lower bound > 0.4 at confidence 1 − 10⁻⁶).
func TestAuditMeasureMutant(t *testing.T) {
	res := audit.MustRunScalar(t, measureAuditMech(1000, []int64{600, 400}, measureMutTotalNoEps, false),
		measureAuditMech(1100, []int64{700, 400}, measureMutTotalNoEps, false), 20_000, 0)
	t.Logf("mutant: ε ≥ %.3f (event %s)", res.EpsilonLowerBound, res.Event)
	if !(res.EpsilonLowerBound > 0.4) {
		t.Errorf("a total measured without its share of ε not caught: ε lower bound %v ≤ 0.4", res.EpsilonLowerBound)
	}
}

// TestMeasureAtoms checks the atoms of a grid against a brute-force
// membership signature: every query is the union of its atoms, the atoms
// partition the grid, and two cells share an atom iff the same queries
// hold them.
func TestMeasureAtoms(t *testing.T) {
	sizes := []int{4, 3}
	qs := []numerical.Query{{}, {Where: [][]int{{0, 1}, nil}}, {Where: [][]int{{1, 2}, {0}}}, {Where: [][]int{nil, {2}}}}
	atomOf, n, qa := atoms(sizes, qs)
	in := func(q numerical.Query, a, b int) bool {
		if len(q.Where) == 0 {
			return true
		}
		ok := func(w []int, c int) bool {
			if w == nil {
				return true
			}
			for _, x := range w {
				if x == c {
					return true
				}
			}
			return false
		}
		return ok(q.Where[0], a) && ok(q.Where[1], b)
	}
	for g := 0; g < 12; g++ {
		for h := 0; h < 12; h++ {
			same := true
			for _, q := range qs {
				if in(q, g/3, g%3) != in(q, h/3, h%3) {
					same = false
				}
			}
			if same != (atomOf[g] == atomOf[h]) {
				t.Fatalf("cells %d and %d: same signature %v, same atom %v", g, h, same, atomOf[g] == atomOf[h])
			}
		}
		for qi, q := range qs {
			has := false
			for _, a := range qa[qi] {
				has = has || a == atomOf[g]
			}
			if has != in(q, g/3, g%3) {
				t.Fatalf("cell %d, query %d: in its atoms %v, in the box %v", g, qi, has, in(q, g/3, g%3))
			}
		}
	}
	if n < 1 || n > 12 {
		t.Fatalf("%d atoms", n)
	}
}

// TestFitAtoms checks that the fitted atoms add up to the total, stay ≥ 0
// for a non-negative measure, and keep their proportions.
func TestFitAtoms(t *testing.T) {
	for _, c := range []struct {
		atoms []float64
		total float64
		nn    bool
	}{
		{[]float64{100, 300, -50}, 800, true},
		{[]float64{-1, -2}, 90, true},
		{[]float64{10, 20}, -5, true},
		{[]float64{10, -20, 5}, 40, false},
	} {
		got := fitAtoms(c.atoms, c.total, c.nn)
		var s float64
		for _, a := range got {
			s += a
			if c.nn && a < 0 {
				t.Fatalf("%+v: negative atom in %v", c, got)
			}
		}
		want := c.total
		if c.nn {
			want = math.Max(c.total, 0)
		}
		if math.Abs(s-want) > 1e-9 {
			t.Fatalf("%+v: atoms %v add up to %v, want %v", c, got, s, want)
		}
	}
	if got := fitAtoms([]float64{100, 300}, 800, true); got[1] != 3*got[0] {
		t.Fatalf("proportions lost: %v", got)
	}
}
