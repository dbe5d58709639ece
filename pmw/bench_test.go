package pmw

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// benchSetup builds an engine over m columns of 10 values with the given
// two-way marginals and a random sparse histogram of 1e5 tuples, ready for
// rounds.
func benchSetup(tb testing.TB, m int, pairs [][2]int) *engine {
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
// BenchmarkStreamingPass.
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
			b.ResetTimer()
			for b.Loop() {
				e.round()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(e.u.Len()), "ns/cell")
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
		var s float64
		for _, v := range a {
			s += v
		}
		sink = s
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(a)), "ns/cell")
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
