package relational

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// randomContributions draws k units with 1–3 ids each and up to 6 groups
// with distinct unit combinations and integer ψ ∈ {1, 2, 3}.
func randomContributions(rng *rand.Rand, k int) ([]Contribution, []int) {
	counts := make([]int, k)
	for i := range counts {
		counts[i] = 1 + rng.IntN(3)
	}
	seen := map[[4]int]bool{}
	var cs []Contribution
	for n := rng.IntN(7); len(cs) < n; {
		var key [4]int
		units := make([]int, k)
		for i := range units {
			units[i] = rng.IntN(counts[i])
			key[i] = units[i]
		}
		if seen[key] {
			n-- // combination taken: draw fewer groups
			continue
		}
		seen[key] = true
		cs = append(cs, Contribution{Units: units, Psi: float64(1 + rng.IntN(3))})
	}
	return cs, counts
}

// bruteTruncation is max Σ u_j over integer 0 ≤ u_j ≤ ψ_j with every unit's
// sum ≤ τ, by enumeration. For k ≤ 2 the LP's constraint matrix is totally
// unimodular, so this is the LP value; for k ≥ 3 it is a lower bound.
func bruteTruncation(cs []Contribution, k int, tau float64) float64 {
	load := make([]map[int]float64, k)
	for i := range load {
		load[i] = map[int]float64{}
	}
	best := 0.0
	var rec func(j int, sum float64)
	rec = func(j int, sum float64) {
		if j == len(cs) {
			best = math.Max(best, sum)
			return
		}
		for u := 0.0; u <= cs[j].Psi; u++ {
			ok := true
			for i, id := range cs[j].Units {
				if load[i][id]+u > tau {
					ok = false
				}
			}
			if !ok {
				break
			}
			for i, id := range cs[j].Units {
				load[i][id] += u
			}
			rec(j+1, sum+u)
			for i, id := range cs[j].Units {
				load[i][id] -= u
			}
		}
	}
	rec(0, 0)
	return best
}

func total(cs []Contribution) float64 {
	s := 0.0
	for _, c := range cs {
		s += c.Psi
	}
	return s
}

// downSensitivity is DS_Q(I): the largest total ψ of one unit id.
func downSensitivity(cs []Contribution, k int) float64 {
	best := 0.0
	for i := 0; i < k; i++ {
		sum := map[int]float64{}
		for _, c := range cs {
			sum[c.Units[i]] += c.Psi
			best = math.Max(best, sum[c.Units[i]])
		}
	}
	return best
}

// withoutUnit deletes unit id u of unit 0 and its join results (the
// user-level neighbour).
func withoutUnit(cs []Contribution, u int) []Contribution {
	var out []Contribution
	for _, c := range cs {
		if c.Units[0] != u {
			out = append(out, c)
		}
	}
	return out
}

func ladder(t *testing.T, tr Truncation, taus []float64) []float64 {
	t.Helper()
	out := make([]float64, len(taus))
	for i, tau := range taus {
		v, err := tr.At(context.Background(), tau)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = v
	}
	return out
}

// TestTruncationBruteForce checks the closed form (k = 1) and the max flow
// (k = 2, augmented along the ladder) against enumeration of the integer
// truncations on 400 random instances each, and R2T's three properties:
// Q(I, τ) ≤ Q(I), |Q(I, τ) − Q(I′, τ)| ≤ τ for the neighbour I′ without a
// unit, and Q(I, τ) = Q(I) for τ ≥ DS_Q(I).
func TestTruncationBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2))
	taus := []float64{1, 2, 3, 4, 6, 8, 16}
	for _, k := range []int{1, 2} {
		for inst := 0; inst < 400; inst++ {
			cs, counts := randomContributions(rng, k)
			tr, err := NewTruncation(cs, counts)
			if err != nil {
				t.Fatal(err)
			}
			got := ladder(t, tr, taus)
			u := rng.IntN(counts[0])
			trN, err := NewTruncation(withoutUnit(cs, u), counts)
			if err != nil {
				t.Fatal(err)
			}
			gotN := ladder(t, trN, taus)
			ds := downSensitivity(cs, k)
			for i, tau := range taus {
				if want := bruteTruncation(cs, k, tau); got[i] != want {
					t.Fatalf("k=%d instance %d τ=%v: Q(I,τ) = %v, brute force %v (%+v)", k, inst, tau, got[i], want, cs)
				}
				if got[i] > total(cs) {
					t.Fatalf("k=%d: Q(I,τ) = %v > Q(I) = %v", k, got[i], total(cs))
				}
				if math.Abs(got[i]-gotN[i]) > tau {
					t.Fatalf("k=%d: sensitivity |%v − %v| > τ = %v", k, got[i], gotN[i], tau)
				}
				if tau >= ds && got[i] != total(cs) {
					t.Fatalf("k=%d: τ = %v ≥ DS = %v but Q(I,τ) = %v ≠ Q(I) = %v", k, tau, ds, got[i], total(cs))
				}
			}
			// A fresh flow at each τ agrees with the augmented one.
			for i, tau := range taus {
				fresh, _ := NewTruncation(cs, counts)
				if v, _ := fresh.At(context.Background(), tau); v != got[i] {
					t.Fatalf("k=%d: fresh Q(I,%v) = %v, along the ladder %v", k, tau, v, got[i])
				}
			}
		}
	}
}

// TestFlowLarge checks the flow on a larger random bipartite instance
// against the closed form's upper bound and Q(I) at τ ≥ DS.
func TestFlowLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 3))
	n1, n2 := 300, 200
	var cs []Contribution
	seen := map[[2]int]bool{}
	for len(cs) < 3000 {
		a, b := rng.IntN(n1), int(float64(n2)*math.Pow(rng.Float64(), 3)) // skewed right side
		if seen[[2]int{a, b}] {
			continue
		}
		seen[[2]int{a, b}] = true
		cs = append(cs, Contribution{Units: []int{a, b}, Psi: float64(1 + rng.IntN(4))})
	}
	tr, _ := NewTruncation(cs, []int{n1, n2})
	ds := downSensitivity(cs, 2)
	prev := 0.0
	for tau := 2.0; tau < 2*ds; tau *= 2 {
		v, err := tr.At(context.Background(), tau)
		if err != nil {
			t.Fatal(err)
		}
		if v < prev {
			t.Fatalf("Q(I,τ) decreased along the ladder: %v < %v", v, prev)
		}
		if bound := math.Min(tau*float64(n2), total(cs)); v > bound {
			t.Fatalf("Q(I,%v) = %v above %v", tau, v, bound)
		}
		prev = v
	}
	if prev != total(cs) {
		t.Fatalf("at τ ≥ DS = %v: Q(I,τ) = %v, Q(I) = %v", ds, prev, total(cs))
	}
}
