package privacyunit

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/internal/audit"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
)

// The audits run the whole release mechanism (Prepare + Run: clip choice,
// row count, mwem on the bounded histogram) on two neighbouring instances
// under the unit relation: D′ deletes a unit X of D and every row it owns.
// The engine's statistics are replaced by memStats, which computes the same
// aggregates in Go (TestUnitHistogramOracle checks the engine's SQL against
// the same formula). Two pairs, each giving power against some mutants:
//
//   - heavy: auditLight units of one row in c1, and X with auditHeavy
//     rows in c0 (bounded to r = auditBound rows): the share of c0 moves by
//     r rows' worth, and by auditHeavy without bounding;
//   - tipping: auditLight units of one row in c1, auditTip units of two
//     rows in c1, and X with two rows in c0: the clip's score of C = 1 is
//     −(auditTip+1) with X and −auditTip without, that of C = 2 is −λ
//     both times, and auditTip < λ < auditTip + 1, so the clip chosen
//     from the true scores is 2 with X and 1 without
//     (TestAuditTippingPair checks it).
const (
	auditEps   = 2.0
	auditDelta = 1e-4
	auditLight = 1000 // units of one row in c1
	auditHeavy = 1000 // rows of unit X in the heavy pair, all in c0
	auditBound = 16   // r: X weighs 16 rows in all
	auditTip   = 13   // units of two rows in the tipping pair: ε_C = (0.1 − 0.02)·2 = 0.16 (the unit count takes 0.02 of the count's 0.1), λ = 1/ε_Q = 1/(0.45·0.16) = 13.89 (ClipPenalty: (units − 2/ε_U)/40 ≈ (1,014 − 50)/40 = 24 is above it)
)

// memStats serves the statistics of a two-cell instance: per unit, its
// rows in c0 and c1. The units are kept as groups of identical units (a
// unit's rows and how many units have them): every statistic is a sum over
// units of a function of the unit's rows, so a group adds its count times
// one unit's share — the same sums as one unit at a time, in a few steps
// instead of a thousand per run of the audits.
type memStats struct{ units []unitGroup }

// unitGroup is n units with the same rows in c0 and c1.
type unitGroup struct {
	rows [2]int64
	n    int64
}

// add appends n units with the rows v.
func (m *memStats) add(v [2]int64, n int64) {
	if k := len(m.units) - 1; k >= 0 && m.units[k].rows == v {
		m.units[k].n += n
		return
	}
	m.units = append(m.units, unitGroup{rows: v, n: n})
}

func (m memStats) CheckPrimaryKey(context.Context, *hypergraph.Hypergraph, string, []string) error {
	return nil
}

func (m memStats) UnitHistogram(_ context.Context, _ *hypergraph.Hypergraph, _ engine.UnitKey, _ []spec.ColumnRef, _ []int, grid, bound int64) ([]engine.Cell, []engine.UnitDegree, error) {
	var cells [2]int64
	degs := map[int64]int64{}
	for _, g := range m.units {
		u := g.rows
		n := u[0] + u[1]
		if n == 0 {
			continue
		}
		w := min(grid, bound/n)
		cells[0] += g.n * u[0] * w
		cells[1] += g.n * u[1] * w
		degs[n] += g.n
	}
	var out []engine.Cell
	for i, c := range cells {
		if c > 0 {
			out = append(out, engine.Cell{Index: int64(i), Count: c})
		}
	}
	var ds []engine.UnitDegree
	for _, n := range slices.Sorted(maps.Keys(degs)) {
		ds = append(ds, engine.UnitDegree{Rows: n, Units: degs[n]})
	}
	return out, ds, nil
}

// UnitMarginalL2 is the L2-clipped marginal of the one released column:
// each unit's rows weigh the largest w ≤ grid with w²·‖v_u‖² ≤ bound²
// (the engine's formula, TestUnitMarginalL2Oracle).
func (m memStats) UnitMarginalL2(_ context.Context, _ *hypergraph.Hypergraph, _ engine.UnitKey, _ []spec.ColumnRef, _ []int, grid, bound int64) ([]engine.Cell, error) {
	var cells [2]int64
	for _, g := range m.units {
		u := g.rows
		sq := u[0]*u[0] + u[1]*u[1]
		if sq == 0 {
			continue
		}
		w := min(grid, int64(math.Floor(float64(bound)/math.Sqrt(float64(sq)))))
		for bound < 1<<31 && w > 0 && w*w*sq > bound*bound {
			w--
		}
		for bound < 1<<31 && w < grid && (w+1)*(w+1)*sq <= bound*bound {
			w++
		}
		cells[0] += g.n * u[0] * w
		cells[1] += g.n * u[1] * w
	}
	var out []engine.Cell
	for i, c := range cells {
		if c > 0 {
			out = append(out, engine.Cell{Index: int64(i), Count: c})
		}
	}
	return out, nil
}

// auditSpec is a two-table spec: units u, rows o referencing u, released
// column o_cat with two values (c0, c1).
func auditSpec(t testing.TB) (*spec.Spec, *hypergraph.Folding) {
	t.Helper()
	y := `privacy: {epsilon: 2, delta: 1e-4, unit: u}
tables:
  - name: u
    source: u.csv
    primary_key: u_id
    columns: {u_id: {type: key}}
  - name: o
    source: o.csv
    primary_key: o_id
    columns: {o_id: {type: key}, o_ref: {type: key}, o_cat: {type: categorical, values: [c0, c1]}}
join: [o.o_ref = u.u_id]
release: {columns: [o_cat]}
`
	s, err := spec.Parse([]byte(y), filepath.Join(t.TempDir(), "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Folding()
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

// auditOut is what a run publishes that the events look at: the file's
// rows, the count's clip and the model's share of c0.
type auditOut struct {
	rows, clip, bound, units int64
	c0                       float64
}

func auditMech(t testing.TB, mut mutation, tipping, withX, factored bool) audit.Mechanism[auditOut] {
	pair := pairHeavy
	if tipping {
		pair = pairTipping
	}
	return auditMechWith(t, mut, pair, withX, factored)
}

// auditPair names the instance pair of an audit (see auditMechWith).
type auditPair int

const (
	pairHeavy auditPair = iota
	pairTipping
	pairQuantile
	pairSpread
	pairHeavyL2    // the heavy pair on the factored model with Config.L2: X's vector is all in c0
	pairLargeClip  // 200 units of 64 rows in c1 and X of 64 rows in c0: the count's clip is ≥ 64
	pairL2Rescaled // L2 on the factored model: 50 units of (8, 24) rows and X of (1,000, 0); the L2 tables outweigh the model's total
)

// auditMechWith is auditMech for a pair: pairHeavy and pairTipping as
// above; pairQuantile the automatic-bound pair: the release chooses r
// privately (Config.AutoBound) on 1 unit of one row, 5 of two rows and 14
// of ten rows (all in c1), and X of one row in c0 (at ε = 2 the quantile
// is q = 4/20, and the true scores −|16·#{n_u ≤ r} − 4·#{n_u > r}| put the
// best r at 2 without X (−40 against −60 for r = 1) and at 1 with X (−44
// against −56)); pairSpread the L2 pair: the heavy pair's light units and
// X with auditHeavy/2 rows in each cell, released with Config.L2 on the
// factored model, so the rounds measure X's vector clipped to L2 norm r
// (r/√2 rows' worth in c0) — and auditHeavy/2 rows in c0 unclipped.
func auditMechWith(t testing.TB, mut mutation, pair auditPair, withX, factored bool) audit.Mechanism[auditOut] {
	tipping, quantile := pair == pairTipping, pair == pairQuantile
	s, f := auditSpec(t)
	u, err := pmw.NewUniverse([]string{"o_cat"}, []int{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st memStats
	st.add([2]int64{0, 1}, auditLight)
	x := [2]int64{auditHeavy, 0}
	if tipping {
		st.add([2]int64{0, 2}, auditTip)
		x = [2]int64{2, 0}
	}
	if quantile {
		st = memStats{}
		st.add([2]int64{0, 1}, 1)
		st.add([2]int64{0, 2}, 5)
		st.add([2]int64{0, 10}, 14)
		x = [2]int64{1, 0}
	}
	if pair == pairSpread {
		x = [2]int64{auditHeavy / 2, auditHeavy / 2}
		factored = true
	}
	if pair == pairHeavyL2 {
		factored = true
	}
	if pair == pairL2Rescaled {
		// Each light unit weighs 16 rows under the L1 bound (½ a row
		// each) and √640 ≈ 25.3 rows' worth under the L2 clip (0.63 a
		// row): the L2 tables' total, about 1,010 rows, exceeds the
		// model's, about 800, so every round's table is rescaled to the
		// model's total and the model's share of c0 (≈ ¼) follows the
		// round measurements rather than the noise of that total.
		st = memStats{}
		st.add([2]int64{8, 24}, 50)
		factored = true
	}
	if pair == pairLargeClip {
		st = memStats{}
		st.add([2]int64{0, 64}, 200)
		x = [2]int64{64, 0}
	}
	if withX {
		st.add(x, 1)
	}
	cfg := Config{Epsilon: auditEps, Delta: auditDelta, Columns: spec.FoldColumns(f, s.Release.Columns), Universe: u,
		Families: auditFamilies(), Bound: auditBound, AutoBound: quantile, Rounds: 2, mutation: mut}
	if factored {
		cfg.Universe, cfg.Factored, cfg.Names, cfg.Sizes = nil, true, []string{"o_cat"}, []int{2}
	}
	cfg.L2 = pair == pairSpread || pair == pairHeavyL2 || pair == pairL2Rescaled
	return unitMech(s, f, cfg, st)
}

// unitMech is one release (Prepare + Run) on stats with cfg, viewed as
// auditOut.
func unitMech(s *spec.Spec, f *hypergraph.Folding, cfg Config, st Stats) audit.Mechanism[auditOut] {
	return func(src dp.Source) auditOut {
		l, _ := dp.NewLedger(dp.Budget{Epsilon: auditEps, Delta: auditDelta})
		p, err := Prepare(s, f, cfg, l)
		if err != nil {
			panic(err)
		}
		res, err := p.Run(context.Background(), src, st)
		if err != nil {
			panic(err)
		}
		if res.Factored != nil {
			// The factored model's share of c0, read off its marginal
			// (post-processing; rows sampled from it would add their own
			// noise and hide a measurement 16 times too precise).
			mu, err := res.Factored.Marginal([]int{0})
			if err != nil {
				panic(err)
			}
			return auditOut{rows: res.Rows, clip: res.Clip, bound: int64(p.Bound()), units: res.Units, c0: mu[0]}
		}
		w := res.PMW.Weights
		return auditOut{rows: res.Rows, clip: res.Clip, bound: int64(p.Bound()), units: res.Units, c0: w[0] / (w[0] + w[1])}
	}
}

// auditEvents is the event family, fixed in advance: thresholds on the
// rows, the clip and the share of c0, each with its complement.
func auditEvents() []audit.Event[auditOut] {
	var ev []audit.Event[auditOut]
	add := func(name string, in func(auditOut) bool) {
		ev = append(ev, audit.Event[auditOut]{Name: name, In: in},
			audit.Event[auditOut]{Name: "not " + name, In: func(o auditOut) bool { return !in(o) }})
	}
	// The large-clip pair's join has 12,800 rows without X and 12,864
	// with it: the last thresholds split them.
	for _, th := range []int64{980, 990, 995, 998, 1000, 1001, 1002, 1005, 1010, 1020, 1050, 1100, 2000, 12800, 12820, 12832, 12845, 12864} {
		add(fmt.Sprintf("rows ≤ %d", th), func(o auditOut) bool { return o.rows <= th })
	}
	for _, c := range clipCandidates[:12] {
		add(fmt.Sprintf("clip ≤ %d", c), func(o auditOut) bool { return o.clip <= c })
	}
	// The large-clip pair has 200 units without X and 201 with it.
	add("units ≤ 200", func(o auditOut) bool { return o.units <= 200 })
	for _, c := range boundLadder[:6] {
		add(fmt.Sprintf("r ≤ %d", c), func(o auditOut) bool { return o.bound <= c })
	}
	for _, th := range []float64{0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.015, 0.02, 0.05, 0.2, 0.24, 0.245, 0.25, 0.255, 0.26, 0.265, 0.27, 0.5} {
		add(fmt.Sprintf("share of c0 ≤ %g", th), func(o auditOut) bool { return o.c0 <= th })
	}
	return ev
}

// auditRuns is the number of runs per input with SYNTH_SLOW_AUDITS: every
// mutant is caught with 12,000 (each at ε ≥ 6.3 against the claim 2 when
// last measured), and a pair takes about 1.5 s.
func auditRuns() int { return 12_000 }

// heavyRuns is the runs per input of the honest heavy and tipping pairs:
// auditRuns with SYNTH_SLOW_AUDITS, 6,000 by default (issue 39, to pay for
// its default audits): every knob of these pairs is caught at 1,500 runs
// with ε ≥ 4.4, so a bug as strong planted in the code fails the honest
// pair at 6,000 with a wider margin still.
func heavyRuns() int {
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		return auditRuns()
	}
	return 6_000
}

// mutantRuns is the number of runs per input of an audit that must catch
// a planted bug (a mutation knob). With SYNTH_SLOW_AUDITS (.ci/run) it is
// [auditRuns]; by default 1,500: a mutant's event then has 0 runs on one
// side against (nearly) all on the other, and the lower bound, at the same
// confidence 1 − 10⁻⁶ over the ~100 intervals, is about ln(1500/19) ≈ 4.4
// against the claim 2 (at 3,000 it was 4.93 to 5.02 when last measured).
// The two mutants whose event is not all-or-nothing were measured at
// 3,000: the row count noised for one row (2,734 against 11 runs, 4.09)
// and the L2 tables noised for r/16 (2,353 against 18, 3.67); with their
// counts halved and moved five standard deviations against the audit, the
// bound at 1,500 is still above 3. Honest audits keep more runs: their
// power to see a leak grows with them (see honestRuns).
func mutantRuns() int {
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		return auditRuns()
	}
	return 1_500
}

// honestRuns is the number of runs per input of the honest audits added
// by issue 39, which run by default so that a bug planted in the code (not
// through a knob) fails them: 2,000 (12,000 with SYNTH_SLOW_AUDITS). Each
// bug of that issue planted in the code was caught at 3,000 with a bound
// between 3.5 and 5.0 against the claim 2 (docs/privacy-units.md) and at
// 2,000 between 3.3 and 4.6 (the log of each audit).
func honestRuns() int {
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		return auditRuns()
	}
	return 2_000
}

// issue39Runs is honestRuns for the honest case and mutantRuns for a
// mutant.
func issue39Runs(mut mutation) int {
	if mut == mutNone {
		return honestRuns()
	}
	return mutantRuns()
}

// runsFor is the number of runs per input of an audit of mut.
func runsFor(mut mutation) int {
	if mut == mutNone {
		return heavyRuns()
	}
	return mutantRuns()
}

func runUnitAudit(t *testing.T, mut mutation, tipping bool) audit.Result {
	t.Helper()
	return runUnitAuditModel(t, mut, tipping, false)
}

func runUnitAuditModel(t *testing.T, mut mutation, tipping, factored bool) audit.Result {
	t.Helper()
	res, err := audit.Run(context.Background(), auditMech(t, mut, tipping, true, factored), auditMech(t, mut, tipping, false, factored), auditEvents(),
		audit.Options{N: runsFor(mut), Delta: auditDelta, Confidence: 1 - 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestAuditPrivacyUnit audits the release as shipped at its claimed (ε, δ)
// on neighbours that delete a unit with auditHeavy rows; the bound holds
// with confidence 1 − 10⁻⁶.
func TestAuditPrivacyUnit(t *testing.T) {
	for _, tipping := range []bool{false, true} {
		res := runUnitAudit(t, mutNone, tipping)
		t.Logf("honest (tipping pair %v): ε ≥ %.3f (event %q, %d vs %d of %d)", tipping, res.EpsilonLowerBound, res.Event, res.CountD, res.CountDPrime, res.N)
		if res.EpsilonLowerBound > auditEps {
			t.Fatalf("empirical ε lower bound %v > claimed ε = %v (event %s)", res.EpsilonLowerBound, auditEps, res.Event)
		}
	}
}

// TestAuditPrivacyUnitMutantCaught plants each bug of the mutation table
// and requires the audit to prove the claim false.
// TestAuditTippingPair: the tipping pair tips — the clip drawn from the
// true scores (the planted bug mutTrueClip) is 2 with X and 1 without in
// every run (the unit count's noise moves the units, not the penalty,
// which sits at 1/ε_Q while ClipPenalty's bound from the units is above
// it). If a change to the clip's penalty moves λ off (auditTip,
// auditTip + 1), this fails and auditTip must follow.
func TestAuditTippingPair(t *testing.T) {
	src := dp.NewSeededSource(1)
	for range 20 {
		with, without := auditMech(t, mutTrueClip, true, true, false)(src), auditMech(t, mutTrueClip, true, false, false)(src)
		if with.clip != 2 || without.clip != 1 {
			t.Fatalf("true-score clip: %d with X and %d without, want 2 and 1", with.clip, without.clip)
		}
	}
}

func TestAuditPrivacyUnitMutantCaught(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mut     mutation
		tipping bool
	}{
		{"no bounding", mutNoBounding, false},
		{"clip from the true quantile", mutTrueClip, true},
		{"noise scaled to one row instead of r", mutRowSigma, false},
		{"row count without noise", mutExactCount, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runUnitAudit(t, tc.mut, tc.tipping)
			t.Logf("%s: ε ≥ %.3f (claim %v; event %q, %d vs %d of %d)", tc.name, res.EpsilonLowerBound, auditEps, res.Event, res.CountD, res.CountDPrime, res.N)
			if res.EpsilonLowerBound <= auditEps {
				t.Fatalf("mutant %q not caught: ε lower bound %v ≤ claim %v", tc.name, res.EpsilonLowerBound, auditEps)
			}
		})
	}
}

// TestAuditPrivacyUnitFactored audits the release on the factored model
// (what pmw.model auto runs for a privacy unit) on the heavy pair: the
// honest run keeps its claim, and the bugs that the model could hide
// (no bounding; the marginals' noise scaled to one row instead of r) are
// caught. The share of c0 is read off the model's rows.
func TestAuditPrivacyUnitFactored(t *testing.T) {
	if testing.Short() || os.Getenv("SYNTH_SLOW_AUDITS") == "" {
		t.Skip("three audits of 12,000 factored runs a side (about a minute): set SYNTH_SLOW_AUDITS=1 (.ci/run does)")
	}
	res := runUnitAuditModel(t, mutNone, false, true)
	t.Logf("honest: ε ≥ %.3f (event %q, %d vs %d of %d)", res.EpsilonLowerBound, res.Event, res.CountD, res.CountDPrime, res.N)
	if res.EpsilonLowerBound > auditEps {
		t.Fatalf("empirical ε lower bound %v > claimed ε = %v (event %s)", res.EpsilonLowerBound, auditEps, res.Event)
	}
	for _, tc := range []struct {
		name string
		mut  mutation
	}{
		{"no bounding", mutNoBounding},
		{"noise scaled to one row instead of r", mutRowSigma},
	} {
		res := runUnitAuditModel(t, tc.mut, false, true)
		t.Logf("%s: ε ≥ %.3f (claim %v; event %q, %d vs %d of %d)", tc.name, res.EpsilonLowerBound, auditEps, res.Event, res.CountD, res.CountDPrime, res.N)
		if res.EpsilonLowerBound <= auditEps {
			t.Errorf("mutant %q not caught on the factored model: ε lower bound %v ≤ claim %v", tc.name, res.EpsilonLowerBound, auditEps)
		}
	}
}

// auditFamilies is the workload: the marginal of the released column.
func auditFamilies() []pmw.Family { return []pmw.Family{pmw.Marginal([]int{0})} }

// runMechAudit audits a release given as two mechanisms (with X, without)
// at runs per input.
func runMechAudit(t *testing.T, m, mPrime audit.Mechanism[auditOut], runs int) audit.Result {
	t.Helper()
	res, err := audit.Run(context.Background(), m, mPrime, auditEvents(), audit.Options{N: runs, Delta: auditDelta, Confidence: 1 - 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// runPairAudit audits the release on pair with mut at runs per input.
func runPairAudit(t *testing.T, mut mutation, pair auditPair, runs int) audit.Result {
	t.Helper()
	return runMechAudit(t, auditMechWith(t, mut, pair, true, false), auditMechWith(t, mut, pair, false, false), runs)
}

// checkUnitAudit logs res and fails t unless the bound exceeds the claim
// exactly when caught is wanted; it also fails an audit that could not
// have exceeded the claim whatever the mechanism did (Result.Ceiling).
func checkUnitAudit(t *testing.T, name string, res audit.Result, caught bool) {
	t.Helper()
	t.Logf("%s: ε ≥ %.3f (claim %v, ceiling %.2f; event %q, %d vs %d of %d)", name, res.EpsilonLowerBound, auditEps, res.Ceiling, res.Event, res.CountD, res.CountDPrime, res.N)
	if !(res.Ceiling > auditEps) {
		t.Errorf("%s: the audit could not have failed: ceiling %.3f ≤ claim %v", name, res.Ceiling, auditEps)
	}
	if got := res.EpsilonLowerBound > auditEps; got != caught {
		t.Errorf("%s: ε lower bound %v against the claim %v (want caught = %v)", name, res.EpsilonLowerBound, auditEps, caught)
	}
}

// TestAuditPrivacyUnitAutoBound audits the release with a privately chosen
// r (Config.AutoBound) on the pair whose true quantile tips with one unit
// of one row: the honest release keeps its claim, and the planted bug that
// takes r from the true scores (no noise in the choice) is caught through
// the published r. Both run by default at [mutantRuns] runs a side (a bug
// planted in the code fails the honest half): the true quantile makes
// r = 1 with X and 2 without in every run, so the event r ≤ 1 is N
// against 0 and the bound ln(3,000/~18) ≈ 5 is far above the claim 2.
func TestAuditPrivacyUnitAutoBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  mutation
	}{
		{"honest", mutNone},
		{"r from the true quantile", mutTrueBound},
	} {
		checkUnitAudit(t, tc.name, runPairAudit(t, tc.mut, pairQuantile, issue39Runs(tc.mut)), tc.mut != mutNone)
	}
}

// TestAuditPrivacyUnitLargeClip audits the row count on the pair whose
// clip C is large: 200 units of 64 rows (in c1), and X of 64 rows (in c0),
// so the clip's exponential mechanism picks C ≥ 64 (C = 45 would leave
// all 200 units above it) and the clipped count moves by 64 with X. The
// count's share of ε is about 50/(2·150) = 0.17 (countShareFor: 200 units
// less two noise scales of 25 at ε = 2), so ε_N ≈ 0.55·(0.33 − 0.04) ≈ 0.16
// and the honest count's discrete Laplace noise has scale C/ε_N ≥ 400; the
// planted bug that scales it to one row (1/ε_N ≈ 6) puts the counts of D
// and D′ 64 apart under noise of 6: the event rows ≤ 12,820 then has
// probability ≈ 0.004 on D against ≈ 0.9 on D′, a bound near 4 at 3,000
// runs a side against the claim 2. (Every audit pair of the older tests
// had C ≤ 2, where the two scales hardly differ.) The unit count drawn
// without noise (200 units against 201) is caught by "units ≤ 200".
func TestAuditPrivacyUnitLargeClip(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  mutation
	}{
		{"honest", mutNone},
		{"row count noised for one row instead of C", mutCountRow},
		{"unit count without noise", mutExactUnits},
	} {
		checkUnitAudit(t, tc.name, runPairAudit(t, tc.mut, pairLargeClip, issue39Runs(tc.mut)), tc.mut != mutNone)
	}
}

// TestAuditPrivacyUnitL2 audits the release with release.contribution_norm
// l2 (each round's measured marginal clipped per unit to L2 norm r). By
// default on the heavy pair, whose unit X has all its 1,000 rows in c0 (a
// concentrated vector: its L2 norm is its L1 norm, so the clip leaves it
// r = 16 rows' worth in c0), with the model's share of c0 read off its
// marginal: the honest run keeps its claim; the tables measured without
// the clip, and measured with noise for r/16 (each table counted 16
// times), are caught. With SYNTH_SLOW_AUDITS also the spread pair (X half
// in each cell) at 12,000 runs.
func TestAuditPrivacyUnitL2(t *testing.T) {
	type tc struct {
		name   string
		mut    mutation
		pair   auditPair
		caught bool
	}
	cases := []tc{
		// The heavy pair's honest L2 release is TestAuditPrivacyUnitEngine's
		// honest case (the same mechanism, its statistics from the engine).
		{"L2 tables not clipped", mutNoL2Clip, pairHeavyL2, true},
		{"rescaled pair, honest", mutNone, pairL2Rescaled, false},
		{"rescaled pair, L2 tables noised for r/16", mutL2Scale16, pairL2Rescaled, true},
	}
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" && !testing.Short() {
		cases = append(cases, tc{"spread pair, honest", mutNone, pairSpread, false}, tc{"spread pair, L2 tables not clipped", mutNoL2Clip, pairSpread, true})
	}
	for _, c := range cases {
		runs := issue39Runs(c.mut)
		if c.pair == pairSpread {
			runs = runsFor(c.mut)
		}
		checkUnitAudit(t, c.name, runPairAudit(t, c.mut, c.pair, runs), c.caught)
	}
}

// TestAutoBoundRecorded: with an automatic r the ledger records
// contribution_bound "auto" (not the ladder's top, 4,096, which issue 39
// found in the report for the chosen r) and publishes the chosen r.
func TestAutoBoundRecorded(t *testing.T) {
	s, f := auditSpec(t)
	u, err := pmw.NewUniverse([]string{"o_cat"}, []int{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st memStats
	st.add([2]int64{0, 3}, 50)
	l, _ := dp.NewLedger(dp.Budget{Epsilon: auditEps, Delta: auditDelta})
	p, err := Prepare(s, f, Config{Epsilon: auditEps, Delta: auditDelta, Columns: spec.FoldColumns(f, s.Release.Columns), Universe: u,
		Families: auditFamilies(), AutoBound: true, Rounds: 2}, l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), dp.NewSeededSource(1), st); err != nil {
		t.Fatal(err)
	}
	root := l.Spends()[0]
	if got := root.Details["contribution_bound"]; got != "auto" {
		t.Fatalf("the ledger records contribution_bound %v, want auto", got)
	}
	var chosen []float64
	for _, o := range l.Outputs() {
		if o.Name == "contribution_bound" {
			chosen = append(chosen, o.Value)
		}
	}
	if len(chosen) != 1 || chosen[0] != p.Bound() || chosen[0] > MaxAutoBound {
		t.Fatalf("published contribution_bound %v, plan's r %v", chosen, p.Bound())
	}
}

// TestRowsFloorUnits: the row count never falls below the DP unit count
// (every unit owns at least one join row). On 20 units of one row at ε =
// 0.2 the clipped count's noise (scale ≥ 1/ε_N ≈ 55 rows against 20)
// would clamp it at 0 in about a third of the runs; over 300 runs the
// floor must hold every time and be what sets the rows at least once
// (a run with the count below n̂ has probability above 0.3 each, so none
// in 300 has probability below 10⁻⁴⁶).
func TestRowsFloorUnits(t *testing.T) {
	s, f := auditSpec(t)
	u, err := pmw.NewUniverse([]string{"o_cat"}, []int{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st memStats
	st.add([2]int64{0, 1}, 20)
	const eps = 0.2
	floored := 0
	for seed := range uint64(300) {
		l, _ := dp.NewLedger(dp.Budget{Epsilon: eps, Delta: auditDelta})
		p, err := Prepare(s, f, Config{Epsilon: eps, Delta: auditDelta, Columns: spec.FoldColumns(f, s.Release.Columns), Universe: u,
			Families: auditFamilies(), Bound: 1, Rounds: 2}, l)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Run(context.Background(), dp.NewSeededSource(seed), st)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows < res.Units {
			t.Fatalf("seed %d: %d rows below the DP unit count %d", seed, res.Rows, res.Units)
		}
		if res.Rows == res.Units && res.Units > 0 {
			floored++
		}
	}
	if floored == 0 {
		t.Fatal("the floor never set the rows in 300 runs")
	}
	t.Logf("the unit count set the rows in %d of 300 runs", floored)
}
