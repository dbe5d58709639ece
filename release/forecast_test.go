package release

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/spec"
)

// TestForecastMatchesRelease: the signal forecast repeats pmw's noise
// arithmetic from public parameters, so it must agree with what a release
// then publishes: no measured marginal has more noise per cell than the
// forecast σ (times the run's Δ̃ when Δ̃ is not public), and a marginal
// measured once (an initial 1-way marginal no round measured again) has
// exactly that noise. One case per noise plan: a privacy unit, one table
// (Δ̃ = 1), three tables at tuple level (Δ̃ a DP output), the factored
// model and Laplace noise. A pmw change to its budget split or constants
// not made in forecast.go fails it. Seeded: deterministic.
func TestForecastMatchesRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("five releases")
	}
	for _, tc := range []struct {
		name  string
		edit  func(*spec.Spec)
		known bool
	}{
		{"tpch", nil, true},
		// An automatic r: the forecast is per row of r (not public) at the
		// marginals' 85% of ε (issue 39: it stated r = 1 and 90%).
		{"tpch", func(s *spec.Spec) { s.Release.ContributionBoundAuto = true }, false},
		{"adult", nil, true},
		{"tpch" + tupleLevel, nil, false},
		{"adult", func(s *spec.Spec) { s.PMW.Model = spec.PMWModelFactored }, true},
		{"adult", func(s *spec.Spec) { s.PMW.Noise = spec.PMWNoiseLaplace }, true},
		// 500 rows at ε = 0.5 (n̂/σ₀ ≈ 15): the 1-ways measured again.
		{"adult@500", func(s *spec.Spec) { s.Privacy.Epsilon = 0.5 }, true},
	} {
		var s *spec.Spec
		if strings.HasPrefix(tc.name, "adult@") {
			s = smallSpec(t, tc.name)
		} else {
			s = exampleSpec(t, tc.name)
		}
		if tc.edit != nil {
			tc.edit(s)
		}
		name := tc.name + "/" + s.PMW.Model + s.PMW.Noise
		t.Run(name, func(t *testing.T) {
			p, err := Preflight(s, 0)
			if err != nil {
				t.Fatal(err)
			}
			f, err := ForecastSignal(p)
			if err != nil {
				t.Fatal(err)
			}
			if f.Known != tc.known || !(f.Sigma > 0) || !(f.SigmaMin > 0 && f.SigmaMin < f.Sigma) || len(f.Marginals) < len(s.Release.Columns) {
				t.Fatalf("forecast %+v", f)
			}
			sum, err := Run(context.Background(), Options{Spec: s, OutDir: t.TempDir(), Engine: "duckdb", Source: dp.NewSeededSource(1)})
			if err != nil {
				t.Fatal(err)
			}
			sigma := f.Sigma
			if !f.Known {
				sigma *= sum.DeltaTilde
			}
			if s.Release.ContributionBoundAuto {
				r, ok := sum.Privacy.Parameters["contribution_bound"].(float64)
				if !ok || !strings.Contains(f.Basis, "chosen privately") {
					t.Fatalf("automatic r: chosen %v, basis %q", sum.Privacy.Parameters["contribution_bound"], f.Basis)
				}
				sigma *= r
			}
			few, again := false, false
			for _, o := range sum.Privacy.Outputs {
				if o.Name == "pmw_few_rows" && o.Value == 1 {
					few = true
				}
				if o.Name == "pmw_one_ways_again" && o.Value == 1 {
					again = true
				}
			}
			if tc.name == "adult@500" && !again {
				t.Fatalf("the 500-row release did not measure its 1-ways again (n̂ = %v, forecast σ %v)", sum.NHat, f.Sigma)
			}
			// Each marginal's forecast noise (a 1-way's on the factored
			// model by its column's share), times the regime's factor for
			// the 1-ways: the release's noise is at most that, and equal
			// for some marginal measured once (the 1-ways: every one, in
			// the few-rows and again regimes, unless a round measured it
			// again).
			byName := map[string]MarginalForecast{}
			for _, m := range f.Marginals {
				byName[m.Marginal] = m
			}
			one := 1.0
			switch {
			case few:
				one = f.SigmaFewRows / f.Sigma
			case again:
				one = f.SigmaAgain / f.Sigma
			}
			var most, mostOne float64
			ones := 0
			for _, sg := range sum.Signals {
				m, ok := byName[sg.Marginal]
				if !ok {
					t.Fatalf("%s: not in the forecast", sg.Marginal)
				}
				want := m.Sigma * sigma / f.Sigma
				if m.OneWay {
					want *= one
				}
				r := sg.NoisePerCell / want
				if r > 1+1e-6 {
					t.Errorf("%s: noise %v above the forecast %v", sg.Marginal, sg.NoisePerCell, want)
				}
				most = math.Max(most, r)
				if m.OneWay {
					ones++
					mostOne = math.Max(mostOne, r)
				}
			}
			if math.Abs(most-1) > 1e-6 {
				t.Errorf("forecast σ %v (Δ̃ = %v): no marginal has its forecast noise (largest ratio %v)", sigma, sum.DeltaTilde, most)
			}
			if (few || again) && (ones != len(s.Release.Columns) || math.Abs(mostOne-1) > 1e-6) {
				// Few rows (the tuple-level TPC-H release: Δ̃ ≈ 10³), or
				// moderately few (500 rows): every 1-way was measured
				// twice, at the forecast's combined noise for the regime
				// the run's n̂ chose, and those a round measured again
				// lower still.
				t.Errorf("few rows %v, again %v: %d 1-way signals, the largest noise ratio to the forecast %v; want %d and 1", few, again, ones, mostOne, len(s.Release.Columns))
			}
			// The workload measured once (the release published it on
			// the full Adult): each workload 2-way was measured at its
			// SigmaOnce, and nothing else after the init.
			whole := false
			for _, o := range sum.Privacy.Outputs {
				if o.Name == "pmw_workload_once" && o.Value == 1 {
					whole = true
				}
			}
			if want := tc.name == "adult" && s.PMW.Noise == "" && p.Factored; whole != want {
				t.Errorf("workload measured once %v, want %v", whole, want)
			}
			if whole {
				once := 0
				for _, sg := range sum.Signals {
					m := byName[sg.Marginal]
					if m.OneWay {
						continue
					}
					if once++; !(m.SigmaOnce > 0) || math.Abs(sg.NoisePerCell/m.SigmaOnce-1) > 1e-6 {
						t.Errorf("%s: noise %v, forecast once %v", sg.Marginal, sg.NoisePerCell, m.SigmaOnce)
					}
				}
				if once != 4 {
					t.Errorf("%d workload marginals measured, want 4", once)
				}
			}
			if p.Factored && len(s.Release.Columns) > 1 && tc.name == "adult" {
				// Shares by cells (pmw.InitShares): a 2-cell column's
				// noise above a 16-cell one's.
				if a, b := byName["marginal(sex)"], byName["marginal(education)"]; !(a.Sigma > b.Sigma && a.Share < 1 && b.Share > 1) {
					t.Errorf("1-way forecasts: sex %+v, education %+v", a, b)
				}
			}
		})
	}
}

// TestNearZero: a DP row count at most twice its noise's standard
// deviation is within noise of zero; above, or with no known noise, it is
// not.
func TestNearZero(t *testing.T) {
	for _, tc := range []struct {
		rows        int64
		sd, laplace float64
		warn        bool
	}{
		{0, 10, 0, true},
		{23, 10, 0, true}, // z·sd = 23.26
		{24, 10, 0, false},
		{60175, 2586, 0, false},
		{3, 0, 0, false},
		{39, 0, 10, true}, // b·ln(1/(0.01·(1 + e^{−0.1}))) = 39.58
		{40, 0, 10, false},
		{2, 0, 0.7, true}, // 0.7·ln(1/(0.01·1.2397)) = 3.07: P(X ≥ 4) = 0.0026
		{3, 0, 0.7, true},
		{4, 0, 0.7, false},
	} {
		w := NearZero(tc.rows, tc.sd, tc.laplace)
		if (w != "") != tc.warn {
			t.Errorf("NearZero(%d, %v, %v) = %q, want a warning: %v", tc.rows, tc.sd, tc.laplace, w, tc.warn)
		}
		if w != "" && (!strings.Contains(w, "within noise of zero") || !strings.Contains(w, "probability 99%") || !strings.Contains(w, "at most 1%")) {
			t.Errorf("NearZero(%d, %v, %v) = %q", tc.rows, tc.sd, tc.laplace, w)
		}
	}
	// The discrete Laplace's standard deviation: √(2r)/(1 − r), r = e^{−1/b},
	// → √2·b for a large scale.
	for _, tc := range []struct{ b, want float64 }{{1, math.Sqrt(2/math.E) / (1 - 1/math.E)}, {1000, math.Sqrt2 * 1000}} {
		if got := laplaceSD(tc.b); math.Abs(got-tc.want) > 1e-3*tc.want {
			t.Errorf("laplaceSD(%v) = %v, want %v", tc.b, got, tc.want)
		}
	}
}

// TestOneWayNoise: the forecast's 1-way noise follows pmw's rule at its
// lines (n < 8σ₀ few rows, n < 20σ₀ again, else once; n ≤ 0 and the dense
// model once).
func TestOneWayNoise(t *testing.T) {
	f := &SignalForecast{Sigma: 10, SigmaFewRows: 6, SigmaAgain: 7}
	dense := &SignalForecast{Sigma: 10}
	for _, tc := range []struct {
		f      *SignalForecast
		n      float64
		sigma  float64
		regime OneWayRegime
	}{
		{f, 0, 10, OneWayOnce}, {f, -5, 10, OneWayOnce}, {f, 1, 6, OneWayFewRows}, {f, 79.9, 6, OneWayFewRows},
		{f, 80, 7, OneWayAgain}, {f, 199.9, 7, OneWayAgain}, {f, 200, 10, OneWayOnce}, {dense, 100, 10, OneWayOnce},
	} {
		if s, r := tc.f.OneWayNoise(tc.n); s != tc.sigma || r != tc.regime {
			t.Errorf("n = %v: σ %v regime %d, want %v and %d", tc.n, s, r, tc.sigma, tc.regime)
		}
	}
}
