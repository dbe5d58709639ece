package dp

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// expGridSelectRef is ExponentialGrid's selection written plainly (the
// version before the allocation-free one): grid scores and the eligible
// indices as slices, then the same proposal and acceptance draws.
func expGridSelectRef(src Source, scores []float64, eps, sens, errBound float64) int {
	g := ExpGrid(sens, errBound)
	k, ok := GridScores(scores, g)
	p, s := expGridRate(eps, ExpGridSensitivity(sens, g))
	var idx []int
	kmax := int64(math.MinInt64)
	for i := range k {
		if ok[i] {
			idx = append(idx, i)
			kmax = max(kmax, k[i])
		}
	}
	if len(idx) == 0 {
		return 0
	}
	mask := uint64(1)<<s - 1
	for {
		i := idx[uniformN(src, uint64(len(idx)))]
		hi, lo := bits.Mul64(uint64(kmax-k[i]), p)
		var whole uint64
		switch {
		case s == 0 && hi != 0, s > 0 && hi>>s != 0:
			whole = math.MaxUint64
		case s == 0:
			whole = lo
		default:
			whole = hi<<(64-s) | lo>>s
		}
		if !bernoulliExpNeg1Times(src, whole) {
			continue
		}
		if s == 0 || bernoulliExpFrac(src, lo&mask, mask+1) {
			return i
		}
	}
}

// TestExponentialGridMatchesReference: on the same seeded source,
// ExponentialGrid returns the reference's index and leaves the source in
// the same state (the next draw agrees), on random score vectors with NaN
// and −Inf entries, all-ineligible vectors and the test cases above — so
// the allocation-free selection draws exactly what the plain one did.
func TestExponentialGridMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	check := func(sc []float64, eps, sens, errBound float64) {
		t.Helper()
		seed := r.Uint64()
		a, b := NewSeededSource(seed), NewSeededSource(seed)
		got, want := ExponentialGrid(a, sc, eps, sens, errBound), expGridSelectRef(b, sc, eps, sens, errBound)
		if got != want || a.Uint64() != b.Uint64() {
			t.Fatalf("scores %v, ε %v, sens %v: ExponentialGrid %d, reference %d (or the streams diverged)", sc, eps, sens, got, want)
		}
	}
	for _, c := range expGridCases {
		for range 200 {
			check(c.scores, c.eps, c.sens, c.errBound)
		}
	}
	check([]float64{math.NaN(), math.Inf(-1)}, 1, 1, 0)
	for range 5000 {
		n := 1 + r.IntN(30)
		sc := make([]float64, n)
		for i := range sc {
			sc[i] = 20 * r.NormFloat64()
			switch r.IntN(8) {
			case 0:
				sc[i] = math.NaN()
			case 1:
				sc[i] = math.Inf(-1)
			case 2:
				sc[i] = math.Inf(1)
			}
		}
		check(sc, math.Ldexp(1+r.Float64(), r.IntN(12)-4), math.Ldexp(1+r.Float64(), r.IntN(6)-3), 0.01*r.Float64())
	}
}

// BenchmarkExponentialGridRef is BenchmarkExponentialGridDominated's
// cases with the reference selection (its slices and their allocation).
func BenchmarkExponentialGridRef(b *testing.B) {
	for _, c := range []string{"all", "nan", "flat"} {
		nan, name := c == "nan", c
		b.Run(name, func(b *testing.B) {
			src := NewSource()
			scores := make([]float64, 100_000)
			for i := range scores {
				scores[i] = float64(i % 37)
				if nan && i%10 == 9 {
					scores[i] = math.NaN()
				}
			}
			if c == "flat" {
				clear(scores)
			} else {
				scores[12345] = 1036
			}
			b.ReportAllocs()
			for b.Loop() {
				sinkN = expGridSelectRef(src, scores, 1, 1, 0)
			}
		})
	}
}
