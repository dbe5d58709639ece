package release

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/privacyunit"
	"github.com/synth-dp/synth/spec"
)

// normProtocol measures a contribution norm under the non-adaptive
// protocol that compares L1 (row-count) bounding and L2 clipping apples to
// apples: every workload marginal of the spec is measured once with
// Gaussian noise, ρ split evenly over the k marginals, and each noisy
// marginal is post-processed on its own (negative cells set to 0, then
// normalized; uniform if nothing is left) and scored against the true
// join's marginal (TVD, as internal/score scores a marginal). Under either
// norm one unit moves each marginal by at most r in L2 (L1 bounding: the
// L2 norm of a vector is at most its L1 norm, r), so the k marginals
// together by r·√k, and σ = r·√k/√(2ρ) is ρ-zCDP for both: the noise is
// the same, only what the bounding keeps differs. ρ is the marginals' part
// of the release ((1 − privacyunit.DefaultCountShare)·ε, δ) converted as
// pmw converts it.
//
// The bounded marginals are computed in Go from the raw join (exact
// weights min(1, r/n_u) and min(1, r/‖v_u,S‖₂), no grid), independently of
// the engine's queries. It returns the mean TVD over the marginals of one
// seeded run for each norm ("l1", "l2"), and the same without noise (the
// bias of bounding).
type normProtocol struct {
	join  []unitJoinRow
	n     map[string]float64
	ms    [][]int
	sizes []int
	truth [][]float64
	// l1[r] and l2[r]: per marginal, the bounded (unnormalized) tables.
	l1, l2 map[float64][][]float64
}

func newNormProtocol(t testing.TB, s *spec.Spec) *normProtocol {
	t.Helper()
	join, n := unitJoinRows(t, s)
	ms, err := score.WorkloadMarginals(s)
	if err != nil {
		t.Fatal(err)
	}
	p := &normProtocol{join: join, n: n, ms: ms, sizes: s.ReleaseSizes(), l1: map[float64][][]float64{}, l2: map[float64][][]float64{}}
	for _, m := range ms {
		tab := make([]float64, p.cells(m))
		for _, rw := range join {
			tab[p.cell(m, rw)]++
		}
		p.truth = append(p.truth, normalize(tab))
	}
	return p
}

func (p *normProtocol) cells(m []int) int {
	c := 1
	for _, col := range m {
		c *= p.sizes[col]
	}
	return c
}

func (p *normProtocol) cell(m []int, rw unitJoinRow) int {
	k := 0
	for _, col := range m {
		k = k*p.sizes[col] + rw.bins[col]
	}
	return k
}

// bounded returns the bounded tables of every marginal at r under norm.
func (p *normProtocol) bounded(norm string, r float64) [][]float64 {
	cache := p.l1
	if norm == "l2" {
		cache = p.l2
	}
	if b, ok := cache[r]; ok {
		return b
	}
	var out [][]float64
	for _, m := range p.ms {
		tab := make([]float64, p.cells(m))
		w := map[string]float64{}
		if norm == "l1" {
			for u, nu := range p.n {
				w[u] = math.Min(1, r/nu)
			}
		} else {
			vec := map[string]map[int]float64{}
			for _, rw := range p.join {
				if vec[rw.unit] == nil {
					vec[rw.unit] = map[int]float64{}
				}
				vec[rw.unit][p.cell(m, rw)]++
			}
			for u, v := range vec {
				var n2 float64
				for _, x := range v {
					n2 += x * x
				}
				w[u] = math.Min(1, r/math.Sqrt(n2))
			}
		}
		for _, rw := range p.join {
			tab[p.cell(m, rw)] += w[rw.unit]
		}
		out = append(out, tab)
	}
	cache[r] = out
	return out
}

// run returns the mean TVD of one run (sigma 0: the bias alone).
func (p *normProtocol) run(norm string, r, sigma float64, rng *rand.Rand) float64 {
	var tvd float64
	for i, tab := range p.bounded(norm, r) {
		y := make([]float64, len(tab))
		for c, x := range tab {
			if sigma > 0 {
				x += sigma * rng.NormFloat64()
			}
			y[c] = math.Max(0, x)
		}
		tvd += score.TVD(p.truth[i], normalize(y)) / float64(len(p.ms))
	}
	return tvd
}

func normalize(x []float64) []float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	out := make([]float64, len(x))
	for i, v := range x {
		if s > 0 {
			out[i] = v / s
		} else {
			out[i] = 1 / float64(len(x))
		}
	}
	return out
}

// TestUnitNormCompare prints, for the examples in SYNTH_ACCURACY_DATA
// (default tpch,retail), the mean TVD of the workload marginals under L1
// (row-count) bounding and L2 clipping per marginal, measured by
// normProtocol at ε = 0.5, 1, 4 (δ = 1e-6) for each r in SYNTH_UNIT_SWEEP
// (default 1,2,4,8,16,64), averaged over SYNTH_UNIT_NORM_SEEDS runs
// (default 10), and each norm's best r. It reads the raw data and takes
// about a minute, so it runs only with SYNTH_UNIT_NORMS=1; the table is in
// docs/privacy-units.md.
func TestUnitNormCompare(t *testing.T) {
	if os.Getenv("SYNTH_UNIT_NORMS") == "" {
		t.Skip("set SYNTH_UNIT_NORMS=1 to compare L1 and L2 contribution bounding")
	}
	bounds := []float64{1, 2, 4, 8, 16, 64}
	if v := os.Getenv("SYNTH_UNIT_SWEEP"); v != "" {
		bounds = nil
		for _, f := range strings.Split(v, ",") {
			r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				t.Fatal(err)
			}
			bounds = append(bounds, r)
		}
	}
	seeds := 10
	if v := os.Getenv("SYNTH_UNIT_NORM_SEEDS"); v != "" {
		var err error
		if seeds, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"tpch", "retail"}
	if v := os.Getenv("SYNTH_ACCURACY_DATA"); v != "" {
		names = strings.Split(v, ",")
	}
	var out, best strings.Builder
	out.WriteString("| data | norm | r | bias | ε = 0.5 | ε = 1 | ε = 4 |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	best.WriteString("| data | ε | L1: best r, TVD (± s.e.) | L2: best r, TVD (± s.e.) | L1 r = 1 | L2 r = 1 |\n| --- | --- | --- | --- | --- | --- |\n")
	epss := []float64{0.5, 1, 4}
	for _, name := range names {
		s := exampleSpec(t, name)
		if s.Privacy.Unit == "" {
			t.Fatalf("%s declares no privacy.unit", name)
		}
		p := newNormProtocol(t, s)
		k := float64(len(p.ms))
		type cell struct{ mean, se float64 }
		res := map[string]map[float64][]cell{"l1": {}, "l2": {}}
		for _, norm := range []string{"l1", "l2"} {
			for _, r := range bounds {
				row := fmt.Sprintf("| %s | %s | %g | %.4f |", name, norm, r, p.run(norm, r, 0, nil))
				for _, eps := range epss {
					rho, err := dp.RhoForBudget(dp.Budget{Epsilon: (1 - privacyunit.DefaultCountShare) * eps, Delta: 1e-6})
					if err != nil {
						t.Fatal(err)
					}
					sigma := r * math.Sqrt(k) / math.Sqrt(2*rho)
					var xs []float64
					for seed := range seeds {
						// The same noise draws for both norms and every r
						// (common random numbers): the comparison's variance
						// is smaller than each mean's.
						xs = append(xs, p.run(norm, r, sigma, rand.New(rand.NewPCG(uint64(seed), 25))))
					}
					m, se := meanSE(xs)
					res[norm][r] = append(res[norm][r], cell{m, se})
					row += fmt.Sprintf(" %.4f ± %.4f |", m, se)
				}
				out.WriteString(row + "\n")
			}
		}
		for e, eps := range epss {
			line := fmt.Sprintf("| %s | %g |", name, eps)
			for _, norm := range []string{"l1", "l2"} {
				br := bounds[0]
				for _, r := range bounds {
					if res[norm][r][e].mean < res[norm][br][e].mean {
						br = r
					}
				}
				line += fmt.Sprintf(" r = %g: %.4f ± %.4f |", br, res[norm][br][e].mean, res[norm][br][e].se)
			}
			line += fmt.Sprintf(" %.4f | %.4f |", res["l1"][bounds[0]][e].mean, res["l2"][bounds[0]][e].mean)
			best.WriteString(line + "\n")
		}
	}
	fmt.Println(out.String())
	fmt.Println(best.String())
}

func meanSE(xs []float64) (mean, se float64) {
	for _, x := range xs {
		mean += x / float64(len(xs))
	}
	if len(xs) < 2 {
		return mean, 0
	}
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(v / float64(len(xs)-1) / float64(len(xs)))
}
