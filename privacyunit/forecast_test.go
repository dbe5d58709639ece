package privacyunit

import (
	"math"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
)

// TestForecastCount holds ForecastCount against the row count it
// forecasts: the shipped mechanism's steps (the DP unit count, the share
// countShareFor draws from it, Plan.count's clip and noisy sum, the floor
// at the unit count) run 3,000 times each (seeded) on skewed per-unit
// row counts. The forecast's probabilities must be within four binomial
// standard deviations plus 0.01 (its continuous Laplace for the discrete
// one) of the observed frequencies, its mean rows/true within four
// standard errors plus 0.02. Cases: 100 units at ε = 1 (the few-units
// regime, where the share is the largest and the clip often too small)
// and at ε = 4; 1,000 units at ε = 1 (the default share).
func TestForecastCount(t *testing.T) {
	skewed := func(n int) []engine.UnitDegree {
		var out []engine.UnitDegree
		for i := range n {
			x := float64(i+1) / float64(n)
			out = append(out, engine.UnitDegree{Rows: 1 + int64(math.Floor(280*math.Pow(x, 4))), Units: 1})
		}
		return out
	}
	const runs = 3000
	for _, tc := range []struct {
		name  string
		eps   float64
		units int
	}{{"100 units, ε = 1", 1, 100}, {"100 units, ε = 4", 4, 100}, {"1,000 units, ε = 1", 1, 1000}} {
		degs := skewed(tc.units)
		f := ForecastCount(tc.eps, degs)
		if f.Units != int64(tc.units) {
			t.Fatalf("%s: %d units, want %d", tc.name, f.Units, tc.units)
		}
		src := dp.NewSeededSource(uint64(tc.units) + uint64(tc.eps*10))
		var below, above, tiny, sum, sum2 float64
		for range runs {
			p := &Plan{cfg: Config{Epsilon: tc.eps}, epsU: UnitCountShare * tc.eps}
			smp, err := dp.NewDiscreteLaplace(dp.NoiseScale(1, p.epsU))
			if err != nil {
				t.Fatal(err)
			}
			units := max(f.Units+smp.Sample(src), 0)
			p.units = units
			p.setCountShare(countShareFor(tc.eps, p.epsU, units))
			rows, _, _, err := p.count(src, degs)
			if err != nil {
				t.Fatal(err)
			}
			r := float64(max(rows, units)) / float64(f.Rows)
			sum += r
			sum2 += r * r
			if r < 0.8 {
				below++
			}
			if r > 1.25 {
				above++
			}
			if r < 0.1 {
				tiny++
			}
		}
		mean := sum / runs
		se := math.Sqrt((sum2/runs - mean*mean) / runs)
		if math.Abs(f.MeanRatio-mean) > 4*se+0.02 {
			t.Errorf("%s: forecast mean rows/true %.3f, observed %.3f ± %.3f", tc.name, f.MeanRatio, mean, se)
		}
		for _, pr := range []struct {
			name      string
			want, got float64
		}{{"below 0.8", f.Below, below / runs}, {"above 1.25", f.Above, above / runs}, {"below 0.1", f.Tiny, tiny / runs}} {
			if sd := math.Sqrt(pr.want * (1 - pr.want) / runs); math.Abs(pr.want-pr.got) > 4*sd+0.01 {
				t.Errorf("%s: forecast P(rows/true %s) %.3f, observed %.3f", tc.name, pr.name, pr.want, pr.got)
			}
		}
		t.Logf("%s: share %.3f clip %d (P(C ≤ 2) %.3f); rows/true mean %.3f (observed %.3f), P(<0.8) %.3f (%.3f), P(>1.25) %.3f (%.3f), P(<0.1) %.3f (%.3f)",
			tc.name, f.Share, f.Clip, f.ClipAtMost2, f.MeanRatio, mean, f.Below, below/runs, f.Above, above/runs, f.Tiny, tiny/runs)
	}
}
