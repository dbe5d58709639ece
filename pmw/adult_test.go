package pmw

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/synth-dp/synth/dp"
	synthengine "github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// adultData is UCI Adult (examples/adult/synth.yaml) as PMW sees it: the
// universe of the released columns, the workload families built from the
// spec as release.Families builds them, the true histogram from the
// engine, and the workload's 1- and 2-way marginals (the accuracy
// target).
type adultData struct {
	u       *Universe
	fams    []Family
	hist    []Cell
	n       int64
	targets []Family // the workload's 1- and 2-way marginals
}

var (
	adultOnce sync.Once
	adultVal  *adultData
	adultErr  error
)

// loadAdult loads the Adult example once per test binary.
func loadAdult(tb testing.TB) *adultData {
	tb.Helper()
	adultOnce.Do(func() { adultVal, adultErr = buildAdult() })
	if adultErr != nil {
		tb.Fatal(adultErr)
	}
	return adultVal
}

func buildAdult() (*adultData, error) {
	ctx := context.Background()
	s, err := spec.Load(filepath.Join("..", "examples", "adult", "synth.yaml"))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(s.Release.Columns))
	pos := map[spec.ColumnRef]int{}
	for i, r := range s.Release.Columns {
		names[i] = r.Column
		pos[r] = i
	}
	sizes := s.ReleaseSizes()
	u, err := NewUniverse(names, sizes, 0)
	if err != nil {
		return nil, err
	}
	idx := func(refs []spec.ColumnRef) []int {
		out := make([]int, len(refs))
		for i, r := range refs {
			out[i] = pos[r]
		}
		return out
	}
	a := &adultData{u: u}
	// The workload as release/workload.go turns it into families.
	for _, m := range s.Workload.Marginals {
		f := Marginal(idx(m))
		a.fams = append(a.fams, f)
		if len(m) <= 2 {
			a.targets = append(a.targets, f)
		}
	}
	for _, r := range s.Workload.Ranges {
		a.fams = append(a.fams, Range(pos[r.Column], idx(r.By)))
	}
	for _, q := range s.Workload.Numeric {
		sum := pos[q.Sum]
		col := s.Column(q.Sum)
		scale := math.Max(math.Abs(col.Min), math.Abs(col.Max))
		wcols := []int{sum}
		for _, c := range q.Where {
			if p := pos[c.Column]; p != sum {
				wcols = append(wcols, p)
			}
		}
		// Weights: the bin's lower edge over the scale when every
		// condition holds (a close stand-in for release's representative
		// values; only the candidate marginal cols ∪ wcols matters here).
		size := 1
		for _, c := range wcols {
			size *= sizes[c]
		}
		wt := make([]float64, size)
		bins := make([]int, len(wcols))
		for l := range wt {
			x := l
			for k := len(wcols) - 1; k >= 0; k-- {
				bins[k] = x % sizes[wcols[k]]
				x /= sizes[wcols[k]]
			}
			in := true
			for _, c := range q.Where {
				k := 0
				for wcols[k] != pos[c.Column] {
					k++
				}
				cc := s.Column(c.Column)
				if cc.Type == spec.Categorical {
					ok := false
					for _, v := range c.Values {
						ok = ok || cc.Values[bins[k]] == v
					}
					in = in && ok
				} else {
					lo := cc.Edges()[bins[k]]
					in = in && lo >= c.Lo && lo <= c.Hi
				}
			}
			if in {
				wt[l] = col.Edges()[bins[0]] / scale
			}
		}
		a.fams = append(a.fams, Weighted(nil, wcols, wt))
	}
	eng, err := synthengine.Open(ctx, "duckdb")
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	if err := eng.Load(ctx, s); err != nil {
		return nil, err
	}
	h, err := s.Hypergraph()
	if err != nil {
		return nil, err
	}
	cells, err := eng.Histogram(ctx, h, s.Release.Columns, sizes)
	if err != nil {
		return nil, err
	}
	for _, c := range cells {
		a.hist = append(a.hist, Cell{Index: c.Index, Count: c.Count})
		a.n += c.Count
	}
	return a, nil
}

// meanTVD returns the mean total variation distance between the
// normalised marginals of w and of the true histogram over the target
// families (internal evaluation on the TRUE data, never published).
func (a *adultData) meanTVD(tb testing.TB, w []float64) float64 {
	tb.Helper()
	truth := make([]float64, a.u.Len())
	for _, h := range a.hist {
		truth[h.Index] += float64(h.Count)
	}
	var sum float64
	for _, f := range a.targets {
		q, err := f.Bind(a.u)
		if err != nil {
			tb.Fatal(err)
		}
		got, want := make([]float64, q.Len()), make([]float64, q.Len())
		q.Answer(w, got)
		q.Answer(truth, want)
		var gs, ws float64
		for i := range got {
			gs += got[i]
			ws += want[i]
		}
		var tvd float64
		for i := range got {
			g := 0.0
			if gs > 0 {
				g = got[i] / gs
			}
			tvd += math.Abs(g - want[i]/ws)
		}
		sum += tvd / 2
	}
	return sum / float64(len(a.targets))
}

// adultTVD runs Run on Adult and returns the mean TVD of the workload's
// 1- and 2-way marginals.
func adultTVD(tb testing.TB, a *adultData, seed uint64, cfg Config) (float64, *Result) {
	tb.Helper()
	cfg.Delta, cfg.Sensitivity = 1e-6, 1
	res, err := Run(context.Background(), dp.NewSeededSource(seed), a.u, a.fams, a.hist, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return a.meanTVD(tb, res.Weights), res
}

// adultRun is what the accuracy tests keep of one Adult run.
type adultRun struct {
	tvd    float64
	rounds int
}

// adultMemo holds the Adult runs of this test binary, by seed, ε and
// iterate (final or average): a seeded run is deterministic, and
// TestMWEMAdultAccuracy's table and TestMWEMFinalVersusAverage make the
// same nine final-iterate runs (seeds 0–2, ε 0.5 / 1 / 4). Each entry is
// made once (the two tests run in parallel: the second waits for the
// first's run instead of repeating it).
var adultMemo = struct {
	sync.Mutex
	m map[[3]float64]*adultEntry
}{m: map[[3]float64]*adultEntry{}}

// adultEntry is one memoised run, made by the first caller.
type adultEntry struct {
	once sync.Once
	run  adultRun
	err  error
}

// adultTVDMemo is adultTVD for Config{Epsilon: eps, testAverage: avg},
// made once per binary.
func adultTVDMemo(tb testing.TB, a *adultData, seed uint64, eps float64, avg bool) adultRun {
	tb.Helper()
	key := [3]float64{float64(seed), eps, 0}
	if avg {
		key[2] = 1
	}
	adultMemo.Lock()
	e, ok := adultMemo.m[key]
	if !ok {
		e = &adultEntry{}
		adultMemo.m[key] = e
	}
	adultMemo.Unlock()
	e.once.Do(func() {
		// Set until the run is made: if adultTVD fails tb, a waiting
		// caller fails too instead of reading a zero run.
		e.err = errors.New("the memoised Adult run failed in another test")
		v, res := adultTVD(tb, a, seed, Config{Epsilon: eps, testAverage: avg})
		e.run, e.err = adultRun{tvd: v, rounds: res.Rounds}, nil
	})
	if e.err != nil {
		tb.Fatal(e.err)
	}
	return e.run
}

// TestMWEMAdultAccuracy is the target of issue 10: on UCI Adult
// (examples/adult/synth.yaml, 32,561 rows, 1.6M cells) at ε = 1, δ = 1e-6,
// the mean TVD of the workload's 1- and 2-way marginals is at most 0.05
// with confidence ≥ 99% over the randomness. Over 20 seeds it checks every
// run and Cantelli's inequality: P[X ≥ μ + kσ] ≤ 1/(1 + k²), so with
// k = 10 a run exceeds μ̂ + 10·σ̂ with probability < 1% (distribution-free,
// up to the estimation of μ and σ over 20 runs, which the margin dwarfs:
// measured μ̂ ≈ 0.003, σ̂ ≈ 0.0003). It also logs the table for ε = 0.5,
// 1, 4 (mean over 3 seeds). That is 29 Adult releases: the default run
// checks 2 seeds against 0.05 (the seeds are fixed: no false failure by
// chance; each run's TVD, about 0.003, is a sixteenth of the bound),
// SYNTH_SLOW_AUDITS (.ci/run) all of it.
func TestMWEMAdultAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Adult release 29 times")
	}
	t.Parallel()
	a := loadAdult(t)
	if !slowAudits() {
		for seed := range uint64(2) {
			if v, res := adultTVD(t, a, 1000+seed, Config{Epsilon: 1}); v > 0.05 {
				t.Errorf("seed %d: mean TVD %.4f > 0.05 (%d rounds)", seed, v, res.Rounds)
			}
		}
		return
	}
	const seeds = 20
	var sum, sum2, worst float64
	for seed := range uint64(seeds) {
		v, res := adultTVD(t, a, 1000+seed, Config{Epsilon: 1})
		sum += v
		sum2 += v * v
		worst = math.Max(worst, v)
		if v > 0.05 {
			t.Errorf("seed %d: mean TVD %.4f > 0.05 (%d rounds)", seed, v, res.Rounds)
		}
	}
	mu := sum / seeds
	sd := math.Sqrt(math.Max(sum2/seeds-mu*mu, 0) * seeds / (seeds - 1))
	t.Logf("ε = 1: mean TVD %.4f, sd %.4f, max %.4f over %d seeds; μ + 10σ = %.4f", mu, sd, worst, seeds, mu+10*sd)
	if mu+10*sd > 0.05 {
		t.Errorf("μ + 10σ = %.4f > 0.05: the 99%% bound fails", mu+10*sd)
	}
	for _, eps := range []float64{0.5, 1, 4} {
		var m float64
		rounds := 0
		for seed := range uint64(3) {
			r := adultTVDMemo(t, a, seed, eps, false)
			m += r.tvd / 3
			rounds += r.rounds
		}
		t.Logf("mwem ε = %v: mean TVD %.4f (3 seeds, %.1f rounds on average)", eps, m, float64(rounds)/3)
	}
}

// TestMWEMFinalVersusAverage backs the choice documented on [Run]: on
// Adult the final iterate beats the average of the iterates at ε = 0.5,
// 1 and 4 (mean TVD over 3 seeds). It runs with SYNTH_SLOW_AUDITS
// (.ci/run): it backs a design choice, and takes 18 Adult releases.
func TestMWEMFinalVersusAverage(t *testing.T) {
	if testing.Short() || !slowAudits() {
		t.Skip("runs the Adult release 18 times: set SYNTH_SLOW_AUDITS=1")
	}
	t.Parallel()
	a := loadAdult(t)
	for _, eps := range []float64{0.5, 1, 4} {
		var final, avg float64
		for seed := range uint64(3) {
			final += adultTVDMemo(t, a, seed, eps, false).tvd / 3
			avg += adultTVDMemo(t, a, seed, eps, true).tvd / 3
		}
		t.Logf("ε = %v: final iterate %.4f, average of iterates %.4f", eps, final, avg)
		if !(final < avg) {
			t.Errorf("ε = %v: final %.4f not better than the average %.4f", eps, final, avg)
		}
	}
}

// TestPaperAdultAccuracy logs the same table for [VariantPaper] as the
// release ran it before issue 10 (automatic T, at most 500 rounds). It
// takes about 10 s a run, so it runs only with PMW_PAPER_TABLE=1.
func TestPaperAdultAccuracy(t *testing.T) {
	if testing.Short() || os.Getenv("PMW_PAPER_TABLE") == "" {
		t.Skip("set PMW_PAPER_TABLE=1 (about 10 s a run)")
	}
	a := loadAdult(t)
	for _, eps := range []float64{0.5, 1, 4} {
		var m float64
		for seed := range uint64(3) {
			v, _ := adultTVD(t, a, seed, Config{Variant: VariantPaper, Epsilon: eps, MaxRounds: 500})
			m += v / 3
		}
		t.Logf("paper ε = %v: mean TVD %.4f (3 seeds)", eps, m)
	}
}
