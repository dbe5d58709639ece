package relational

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// ppRun builds one run's results: a GROUP BY of two columns (rows × cols
// groups) of one COUNT query, clipped Laplace with noise scale b, raw
// values y.
func ppRun(rows, cols int, b float64, y []int64) ([]*Query, []Result) {
	q := &Query{Text: "SELECT a, c, COUNT(*) FROM t GROUP BY a, c", Agg: Count}
	var res []Result
	for i := range rows {
		for j := range cols {
			r := Result{Query: q.Text, Group: map[string]string{"t.a": fmt.Sprint(i), "t.c": fmt.Sprint(j)}, Mechanism: ClipMechanism + " (test)", NoiseScale: ptr(b)}
			r.SetValue(y[i*cols+j], 0, true)
			res = append(res, r)
		}
	}
	return []*Query{q}, res
}

// TestPostProcessShrinks: on a 5 × 5 table of equal true counts (1,000)
// with Laplace noise of scale 100, the post-processed values' mean squared
// error over 200 runs is below half the raw values' (the shrinkage is to
// the independence fit, which the truth is); every value is ≥ 0 and the
// raw value is kept where it changed.
func TestPostProcessShrinks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var rawSE, ppSE float64
	for range 200 {
		y := make([]int64, 25)
		for i := range y {
			y[i] = 1000 + int64(math.Round(laplace(rng, 100)))
		}
		qs, res := ppRun(5, 5, 100, y)
		out := PostProcess(qs, res)
		for i, r := range out {
			rawSE += math.Pow(float64(y[i])-1000, 2)
			ppSE += math.Pow(float64(r.Value)-1000, 2)
			if r.Value < 0 {
				t.Fatalf("negative value %d", r.Value)
			}
			if r.Value != max(y[i], 0) && (r.RawValue == nil || *r.RawValue != y[i] || r.PostProcessing == "") {
				t.Fatalf("answer %d changed from %d to %d without its raw value: %+v", i, y[i], r.Value, r)
			}
		}
	}
	t.Logf("MSE raw %.0f, post-processed %.0f", rawSE/5000, ppSE/5000)
	if !(ppSE < rawSE/2) {
		t.Errorf("post-processed MSE %v not below half the raw %v", ppSE/5000, rawSE/5000)
	}
}

// TestPostProcessKeepsSignal: counts that spread far above their noise
// (a table with one cell 100 times the others, noise scale 1) are left
// where they are (within rounding); a SUM query, R2T results and runs of
// fewer than 3 answers are not touched.
func TestPostProcessKeepsSignal(t *testing.T) {
	y := []int64{100000, 1000, 1200, 900, 1100, 1000, 5000, 300, 20}
	qs, res := ppRun(3, 3, 1, y)
	for i, r := range PostProcess(qs, res) {
		if math.Abs(float64(r.Value-y[i])) > 0.01*float64(y[i])+1 {
			t.Errorf("answer %d moved from %d to %d", i, y[i], r.Value)
		}
	}
	qs[0].Agg = Sum
	for i, r := range PostProcess(qs, res) {
		if r.Value != y[i] || r.RawValue != nil {
			t.Fatalf("a SUM was post-processed: %+v", r)
		}
	}
	qs[0].Agg = Count
	for i := range res {
		res[i].Mechanism = "R2T"
	}
	if out := PostProcess(qs, res); out[0].RawValue != nil {
		t.Fatal("R2T answers were post-processed")
	}
	if out := PostProcess(qs, res[:2]); len(out) != 2 || out[0].RawValue != nil {
		t.Fatal("a run of 2 answers was post-processed")
	}
}

// TestSimplexProject checks the projection against its optimality
// conditions on random vectors: x ≥ 0, Σx = s, and x = max(v − θ, 0) for
// one θ (every positive coordinate is v_i − θ, every zero has v_i ≤ θ).
func TestSimplexProject(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for c := 0; c < 200; c++ {
		v := make([]float64, 1+rng.IntN(8))
		for i := range v {
			v[i] = rng.Float64()*200 - 50
		}
		s := rng.Float64() * 300
		x := simplexProject(v, s)
		var sum, theta float64
		found := false
		for i := range x {
			if x[i] < 0 {
				t.Fatalf("negative %v", x)
			}
			sum += x[i]
			if x[i] > 0 {
				if found && math.Abs(v[i]-x[i]-theta) > 1e-9 {
					t.Fatalf("v %v → x %v: two shifts", v, x)
				}
				theta, found = v[i]-x[i], true
			}
		}
		if math.Abs(sum-s) > 1e-9*math.Max(1, s) {
			t.Fatalf("v %v, s %v: x %v sums to %v", v, s, x, sum)
		}
		for i := range x {
			if x[i] == 0 && v[i] > theta+1e-9 {
				t.Fatalf("v %v → x %v: v[%d] above θ = %v set to 0", v, x, i, theta)
			}
		}
	}
}

// laplace draws a Laplace variate of scale b (a test's noise only).
func laplace(rng *rand.Rand, b float64) float64 {
	u := rng.Float64() - 0.5
	return -b * math.Copysign(math.Log(1-2*math.Abs(u)), u)
}

// TestPostProcessOneFactor: a 1-way GROUP BY of 10 equal true counts (and
// the same counts asked as 10 queries without GROUP BY) shrink toward
// their grand mean: over 200 runs the mean squared error drops below half
// the raw one.
func TestPostProcessOneFactor(t *testing.T) {
	for _, perQuery := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(9, 10))
		var rawSE, ppSE float64
		for range 200 {
			y := make([]int64, 10)
			var qs []*Query
			var res []Result
			for i := range y {
				y[i] = 1000 + int64(math.Round(laplace(rng, 100)))
				r := Result{Query: "SELECT b, COUNT(*) FROM t GROUP BY b", Group: map[string]string{"t.b": fmt.Sprint(i)}, Mechanism: ClipMechanism, NoiseScale: ptr(100)}
				if perQuery {
					r.Query, r.Group = fmt.Sprintf("SELECT COUNT(*) FROM t WHERE b = %d", i), nil
				}
				r.SetValue(y[i], 0, true)
				res = append(res, r)
				if perQuery || i == 0 {
					qs = append(qs, &Query{Text: r.Query, Agg: Count})
				}
			}
			for i, r := range PostProcess(qs, res) {
				rawSE += math.Pow(float64(y[i])-1000, 2)
				ppSE += math.Pow(float64(r.Value)-1000, 2)
			}
		}
		t.Logf("per query %v: MSE raw %.0f, post-processed %.0f", perQuery, rawSE/2000, ppSE/2000)
		if !(ppSE < rawSE/2) {
			t.Errorf("per query %v: post-processed MSE %v not below half the raw %v", perQuery, ppSE/2000, rawSE/2000)
		}
	}
}

// TestPostProcessKeepsZeros: a 1-way GROUP BY with one cell of 77,000 and
// 37 measured zeros (Retail's countries: noise scale 132) spreads far
// around its grand mean (λ near 1 > PostProcessMaxKeep), so nothing is
// shrunk and every zero stays 0 (before the rule, rounding turned some of
// them into 1s); with the same cells at 2,000 ± noise (λ small) the run
// is shrunk.
func TestPostProcessKeepsZeros(t *testing.T) {
	q := &Query{Text: "SELECT b, COUNT(*) FROM t GROUP BY b", Agg: Count}
	build := func(y []int64) []Result {
		var res []Result
		for i, v := range y {
			r := Result{Query: q.Text, Group: map[string]string{"t.b": fmt.Sprint(i)}, Mechanism: ClipMechanism, NoiseScale: ptr(132)}
			r.SetValue(v, 0, true)
			res = append(res, r)
		}
		return res
	}
	y := make([]int64, 38)
	y[36] = 77000
	for i, r := range PostProcess([]*Query{q}, build(y)) {
		if r.Value != y[i] || r.PostProcessing != "" {
			t.Errorf("answer %d: %d → %d (%q), want it kept", i, y[i], r.Value, r.PostProcessing)
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range y {
		y[i] = 2000 + int64(math.Round(laplace(rng, 132)))
	}
	changed := 0
	for i, r := range PostProcess([]*Query{q}, build(y)) {
		if r.Value != y[i] {
			changed++
		}
	}
	if changed == 0 {
		t.Errorf("equal counts under noise were not shrunk")
	}
}
