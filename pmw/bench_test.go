package pmw

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/synth-dp/synth/dp"
)

// benchInput returns the universe of m columns of 10 values, the given
// two-way marginals and a random sparse histogram of 1e5 tuples shared by
// the benchmarks.
func benchInput(tb testing.TB, m int, pairs [][2]int) (*Universe, []Family, []Cell) {
	tb.Helper()
	names := make([]string, m)
	sizes := make([]int, m)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
		sizes[i] = 10
	}
	u, err := NewUniverse(names, sizes, 0)
	if err != nil {
		tb.Fatal(err)
	}
	var fams []Family
	for _, p := range pairs {
		fams = append(fams, Marginal([]int{p[0], p[1]}))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hist := make([]Cell, 0, 100000)
	for range 100000 {
		hist = append(hist, Cell{Index: rng.Int64N(u.Len()), Count: 1 + rng.Int64N(3)})
	}
	return u, fams, hist
}

// benchSetup builds an engine over m columns of 10 values with the given
// two-way marginals and a random sparse histogram of 1e5 tuples, ready for
// rounds.
func benchSetup(tb testing.TB, m int, pairs [][2]int) *engine {
	tb.Helper()
	u, fams, hist := benchInput(tb, m, pairs)
	e, err := newEngine(dp.NewSeededSource(7), u, fams, Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1})
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.init(hist); err != nil {
		tb.Fatal(err)
	}
	return e
}

var (
	pairs1e6 = [][2]int{{0, 1}, {2, 3}, {4, 5}, {5, 0}, {1, 2}, {3, 4}, {0, 3}, {2, 5}}
	pairs1e7 = [][2]int{{0, 1}, {2, 3}, {4, 5}, {6, 0}, {1, 2}, {3, 4}, {5, 6}, {0, 3}}
)

// BenchmarkRound times one full PMW round (answer every query by the fused
// pass, score, select, measure, update). Compare ns/cell with
// BenchmarkStreamingPass; x-pass is the round's time over that of one
// streaming pass over as many float64 as the universe has cells, the pass
// timed right after each round (outside the round's timer), so that the
// ratio holds on a loaded machine where the two benchmarks' ns/op, run
// seconds apart, do not compare.
func BenchmarkRound(b *testing.B) {
	for _, bc := range []struct {
		name  string
		m     int
		pairs [][2]int
	}{
		{"cells=1e6", 6, pairs1e6},
		{"cells=1e7", 7, pairs1e7},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := benchSetup(b, bc.m, bc.pairs)
			ones := make([]float64, e.u.Len())
			for i := range ones {
				ones[i] = 1
			}
			var pass time.Duration
			b.ResetTimer()
			for b.Loop() {
				e.round()
				b.StopTimer()
				t := time.Now()
				sink = streamSum(ones)
				pass += time.Since(t)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(e.u.Len()), "ns/cell")
			b.ReportMetric(float64(b.Elapsed())/float64(pass), "x-pass")
		})
	}
}

var sink float64

// BenchmarkStreamingPass is the yardstick: one plain pass summing a 1e7
// float64 slice.
func BenchmarkStreamingPass(b *testing.B) {
	a := make([]float64, 10_000_000)
	for i := range a {
		a[i] = 1
	}
	b.ResetTimer()
	for b.Loop() {
		sink = streamSum(a)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(a)), "ns/cell")
}

// streamSum is the streaming pass: the sum of a, in order.
func streamSum(a []float64) float64 {
	var s float64
	for _, v := range a {
		s += v
	}
	return s
}

// BenchmarkMemory1e8 runs one round over a 1e8-cell universe (8 columns of
// 10, 8 two-way marginals) and reports the heap in use: the dense state is
// 16 bytes per cell (weights + running average, float64) = 1.6 GB.
func BenchmarkMemory1e8(b *testing.B) {
	if testing.Short() {
		b.Skip("allocates 1.6 GB")
	}
	pairs := [][2]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {1, 2}, {3, 4}, {5, 6}, {7, 0}}
	var heap uint64
	for b.Loop() {
		e := benchSetup(b, 8, pairs)
		e.round()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = max(heap, ms.HeapAlloc)
		runtime.KeepAlive(e)
	}
	b.ReportMetric(float64(heap)/(1<<30), "heap-GiB")
}

// BenchmarkFusedPass times the full answering pass alone (all 8 two-way
// marginals of the 1e7-cell workload in one sweep, DefaultWorkers
// goroutines): what a round costs when the tables cannot be patched.
func BenchmarkFusedPass(b *testing.B) {
	e := benchSetup(b, 7, pairs1e7)
	b.ResetTimer()
	for b.Loop() {
		sink = e.plan.run(e.w, e.scratch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(e.u.Len()), "ns/cell")
}

// mwemBenchSetup builds a [VariantMWEM] run over m columns of 10 with the
// given two-way marginals and the random histogram of benchSetup, through
// its initial marginals, with every family measured once so that a sweep
// applies all their factors.
func mwemBenchSetup(tb testing.TB, m int, pairs [][2]int) *mwem {
	tb.Helper()
	u, fams, hist := benchInput(tb, m, pairs)
	e, err := newMWEM(dp.NewSeededSource(7), u, fams, Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1})
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.init(hist); err != nil {
		tb.Fatal(err)
	}
	smp, _ := e.sampler(e.noiseScale(e.unit))
	for _, p := range e.cand {
		e.measure(p, smp, e.variance(e.noiseScale(e.unit)))
	}
	e.prepareFit()
	return e
}

// BenchmarkMWEMSweep times one re-fitting sweep of [VariantMWEM] over 1e7
// cells (7 columns of 10; the 7 initial 1-way and 8 two-way marginals
// measured): the multiplicative update by the 15 factor tables and the
// answers of all tables, in ONE scaled pass (DefaultWorkers goroutines).
// Compare ns/cell with BenchmarkStreamingPass.
func BenchmarkMWEMSweep(b *testing.B) {
	e := mwemBenchSetup(b, 7, pairs1e7)
	e.logRatios()
	b.ResetTimer()
	for b.Loop() {
		e.step(0.01)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(e.u.Len()), "ns/cell")
}

// BenchmarkMWEMRound times one whole [VariantMWEM] round over 1e7 cells:
// scores of the 8 candidates, the exponential mechanism, the discrete
// Gaussian on every cell of the selected marginal, and a fit capped at
// one sweep (plus the line search's backtracking passes, if any: see
// passes/op).
func BenchmarkMWEMRound(b *testing.B) {
	e := mwemBenchSetup(b, 7, pairs1e7)
	sweeps := e.sweeps
	b.ResetTimer()
	for b.Loop() {
		e.t, e.used, e.done = 0, 0, false // an endless budget for the benchmark
		e.round(1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(e.u.Len()), "ns/cell")
	b.ReportMetric(float64(e.sweeps-sweeps)/float64(b.N), "passes/op")
}

// BenchmarkMWEMAdult times the whole [VariantMWEM] run on UCI Adult at
// ε = 1 (examples/adult/synth.yaml: 1.6M cells, its workload), the PMW
// part of a release: the histogram is built once, before the timer.
func BenchmarkMWEMAdult(b *testing.B) {
	a := loadAdult(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := Run(context.Background(), dp.NewSeededSource(uint64(i)), a.u, a.fams, a.hist,
			Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFactoredRound times one round of the factored model (the AIM
// scores of every eligible candidate, the exponential mechanism, the
// discrete Gaussian measurement, the junction tree's rebuild and the
// round's fit) on a universe shaped like Adult's 12-column example (15 ×
// 9 × 16 × 7 × 15 × 6 × 5 × 2 × 20 × 20 × 10 × 2 ≈ 1.1·10¹¹ cells), with
// 32,561 random correlated rows and its workload (every 1-way and seven
// 2-way marginals). Each round is run at the first round's budget, so the
// model keeps growing as a release's would; the state restarts when every
// candidate has been measured a few times.
func BenchmarkFactoredRound(b *testing.B) {
	sizes := []int{15, 9, 16, 7, 15, 6, 5, 2, 20, 20, 10, 2}
	d := len(sizes)
	names := make([]string, d)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 32561
	rows := make([][]int, n)
	for i := range rows {
		x := make([]int, d)
		z := r.Float64() // a latent variable correlates the columns
		for c, k := range sizes {
			x[c] = min(k-1, int((z*0.7+r.Float64()*0.3)*float64(k)))
		}
		rows[i] = x
	}
	for c := range names {
		names[c] = fmt.Sprintf("c%d", c)
	}
	truth := func(_ context.Context, set []int) ([]int64, error) {
		tab := make([]int64, cellsOf(sizes, set))
		for _, x := range rows {
			k := 0
			for _, c := range set {
				k = k*sizes[c] + x[c]
			}
			tab[k]++
		}
		return tab, nil
	}
	var fams []Family
	for c := range d {
		fams = append(fams, Marginal([]int{c}))
	}
	for _, p := range [][2]int{{0, 11}, {2, 11}, {4, 11}, {5, 7}, {8, 11}, {3, 5}, {10, 11}} {
		fams = append(fams, Marginal([]int{p[0], p[1]}))
	}
	cfg := Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, NoNHat: true, Rounds: 60}
	start := func() *factored {
		f, err := startFactored(context.Background(), dp.NewSeededSource(3), names, sizes, fams, truth, cfg)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	f := start()
	b.ResetTimer()
	for b.Loop() {
		if f.t >= f.t0-1 {
			b.StopTimer()
			f = start()
			b.StartTimer()
		}
		if err := f.round(); err != nil {
			b.Fatal(err)
		}
	}
}
