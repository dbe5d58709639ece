package release

import (
	"math"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/numerical"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
)

// unitVecs makes n units, each contributing sum units to atom 0.
func unitVecs(n int, sum int64) [][]unitAtom {
	out := make([][]unitAtom, n)
	for i := range out {
		out[i] = []unitAtom{{atom: 0, sum: sum}}
	}
	return out
}

// The audits' shares of a measure's ε = 1: the clip 0.1, the total 0.3,
// the atoms' clip 0.1, the atoms 0.5. The total alone is then
// (0.1 + 0.3)-DP and the atoms alone (0.1 + 0.5)-DP (they are clipped at
// their own clip, not at C).
const (
	auditUnitQ, auditUnitT, auditUnitR, auditUnitA = 0.1, 0.3, 0.1, 0.5
)

// unitAuditMech runs measureUnitDirect on vecs and returns the published
// total, or the first atom's sum.
func unitAuditMech(vecs [][]unitAtom, ladder []int64, mut measureMutation, atom bool) audit.Mechanism[float64] {
	return func(src dp.Source) float64 {
		_, _, total, atoms, err := measureUnitDirect(src, vecs, 2, ladder, auditUnitQ, auditUnitT, auditUnitR, auditUnitA, 1, mut)
		if err != nil {
			panic(err)
		}
		if atom {
			return float64(atoms[0])
		}
		return float64(total)
	}
}

// atomClipAuditMech returns the atoms' clip that measureUnitDirect chose.
func atomClipAuditMech(vecs [][]unitAtom, ladder []int64, mut measureMutation) audit.Mechanism[float64] {
	return func(src dp.Source) float64 {
		_, r, _, _, err := measureUnitDirect(src, vecs, 2, ladder, auditUnitQ, auditUnitT, auditUnitR, auditUnitA, 1, mut)
		if err != nil {
			panic(err)
		}
		return float64(r)
	}
}

// clipAuditMeasureMech returns the clip C that measureUnitDirect chose.
func clipAuditMeasureMech(vecs [][]unitAtom, ladder []int64, mut measureMutation) audit.Mechanism[float64] {
	return func(src dp.Source) float64 {
		c, _, _, _, err := measureUnitDirect(src, vecs, 2, ladder, auditUnitQ, auditUnitT, auditUnitR, auditUnitA, 1, mut)
		if err != nil {
			panic(err)
		}
		return float64(c)
	}
}

// TestAuditMeasureUnitClip audits the measure's clip C on a pair that tips
// its best score (−above − j·κ/ε_Q, κ/ε_Q = 20 here): 21 units of 64 on
// the ladder 32, 64 score −21 and −20 (best C = 64); 20 units score −20
// and −20 (the first, C = 32, is the best). As shipped its choice must be
// ε_Q = 0.1-DP; with C taken at the true best score (the planted bug) the
// audit must prove that claim false.
func TestAuditMeasureUnitClip(t *testing.T) {
	d, dp2, ladder := unitVecs(21, 64), unitVecs(20, 64), []int64{32, 64}
	res := audit.MustRunScalar(t, clipAuditMeasureMech(d, ladder, measureMutNone), clipAuditMeasureMech(dp2, ladder, measureMutNone), 20_000, 0)
	t.Logf("clip: ε ≥ %.3f (event %s)", res.EpsilonLowerBound, res.Event)
	if res.EpsilonLowerBound > auditUnitQ {
		t.Errorf("clip: empirical ε lower bound %v > claimed %v", res.EpsilonLowerBound, auditUnitQ)
	}
	res = audit.MustRunScalar(t, clipAuditMeasureMech(d, ladder, measureMutTrueClip), clipAuditMeasureMech(dp2, ladder, measureMutTrueClip), 3_000, 0)
	t.Logf("clip at the true best score: ε ≥ %.3f (event %s)", res.EpsilonLowerBound, res.Event)
	if !(res.EpsilonLowerBound > auditUnitQ) {
		t.Errorf("clip at the true best score not caught: ε lower bound %v ≤ %v", res.EpsilonLowerBound, auditUnitQ)
	}
}

// TestAuditMeasureUnitAtomClip audits the atoms' clip on a pair that tips
// its best quantile score (a = 1: −|19·below − above|): one unit of 16
// and 19 of 32 on the ladder 8, 16, 32 score −20, 0, −380 (best r = 16);
// the 19 alone −19, −19, −361 (best r = 8). As shipped its choice must be
// ε_R = 0.1-DP; with the clip taken at the true best score (the planted
// bug) the audit must prove that claim false.
func TestAuditMeasureUnitAtomClip(t *testing.T) {
	d := append(unitVecs(1, 16), unitVecs(19, 32)...)
	dp2 := unitVecs(19, 32)
	ladder := []int64{8, 16, 32}
	res := audit.MustRunScalar(t, atomClipAuditMech(d, ladder, measureMutNone), atomClipAuditMech(dp2, ladder, measureMutNone), 20_000, 0)
	t.Logf("atoms' clip: ε ≥ %.3f (event %s)", res.EpsilonLowerBound, res.Event)
	if res.EpsilonLowerBound > auditUnitR {
		t.Errorf("atoms' clip: empirical ε lower bound %v > claimed %v", res.EpsilonLowerBound, auditUnitR)
	}
	res = audit.MustRunScalar(t, atomClipAuditMech(d, ladder, measureMutTrueAtomClip), atomClipAuditMech(dp2, ladder, measureMutTrueAtomClip), 3_000, 0)
	t.Logf("atoms' clip at the true quantile: ε ≥ %.3f (event %s)", res.EpsilonLowerBound, res.Event)
	if !(res.EpsilonLowerBound > auditUnitR) {
		t.Errorf("atoms' clip at the true quantile not caught: ε lower bound %v ≤ %v", res.EpsilonLowerBound, auditUnitR)
	}
}

// unitAuditPairs are the neighbouring pairs of the unit measure's audits:
// "heavy" deletes a unit of 100,000 units from 20 units of 100 (one rung,
// C = 100: clipped, the total moves by C; unclipped, by 10⁵), and
// "ladder" deletes one of 30 units of 64 on the ladder 16 … 128, where
// the clip itself is chosen from the data.
var unitAuditPairs = []struct {
	name   string
	d, dp  [][]unitAtom
	ladder []int64
}{
	{"heavy", append(unitVecs(20, 100), []unitAtom{{atom: 0, sum: 100_000}}), unitVecs(20, 100), []int64{100}},
	{"ladder", unitVecs(30, 64), unitVecs(29, 64), []int64{16, 23, 32, 46, 64, 91, 128}},
}

// TestAuditMeasureUnit audits the measure's mechanism under a unit as
// shipped: on each pair the total must be (ε_Q + ε_T) = 0.4-DP and the
// first atom (ε_R + ε_A) = 0.6-DP; each bound holds with confidence
// 1 − 10⁻⁶.
func TestAuditMeasureUnit(t *testing.T) {
	runs := 20_000
	if testing.Short() {
		runs = 5_000
	}
	for _, p := range unitAuditPairs {
		for _, c := range []struct {
			atom  bool
			claim float64
		}{{false, auditUnitQ + auditUnitT}, {true, auditUnitR + auditUnitA}} {
			res := audit.MustRunScalar(t, unitAuditMech(p.d, p.ladder, measureMutNone, c.atom), unitAuditMech(p.dp, p.ladder, measureMutNone, c.atom), runs, 0)
			t.Logf("%s (atom %v): ε ≥ %.3f (event %s)", p.name, c.atom, res.EpsilonLowerBound, res.Event)
			if res.EpsilonLowerBound > c.claim {
				t.Errorf("%s (atom %v): empirical ε lower bound %v > claimed %v (event %s)", p.name, c.atom, res.EpsilonLowerBound, c.claim, res.Event)
			}
		}
	}
}

// TestAuditMeasureUnitMutant plants the bugs of a measure under a unit —
// its total measured without its share of ε (noise at the measure's whole
// ε = 1 while the ledger charges ε_T = 0.3), and the per-unit clipping
// skipped — and requires the audit of the heavy pair's total to prove the
// claim ε_Q + ε_T = 0.4 false (lower bound > 0.4 at confidence 1 − 10⁻⁶).
// The first mutant's total is 1-DP on that pair (its clip has one rung),
// 2.5 times the claim; the second moves the total by 10³ scales.
func TestAuditMeasureUnitMutant(t *testing.T) {
	p := unitAuditPairs[0]
	for _, c := range []struct {
		name string
		mut  measureMutation
		runs int
	}{{"total without its share of ε", measureMutTotalNoEps, 20_000}, {"no per-unit clipping", measureMutNoUnitClip, 3_000}} {
		res := audit.MustRunScalar(t, unitAuditMech(p.d, p.ladder, c.mut, false), unitAuditMech(p.dp, p.ladder, c.mut, false), c.runs, 0)
		t.Logf("%s: ε ≥ %.3f (event %s)", c.name, res.EpsilonLowerBound, res.Event)
		if !(res.EpsilonLowerBound > auditUnitQ+auditUnitT) {
			t.Errorf("%s not caught: ε lower bound %v ≤ %v", c.name, res.EpsilonLowerBound, auditUnitQ+auditUnitT)
		}
	}
}

// TestMeasureUnitDirectOracle checks the clipped sums of
// measureUnitDirect against big-integer arithmetic on random signed
// vectors: at ε_T = ε_A = 10³ the noise's scale is C/10³, and every sum
// must lie within 30 scales (plus the rounding) of the oracle at the
// returned clip.
func TestMeasureUnitDirectOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for c := 0; c < 50; c++ {
		nA := 1 + rng.IntN(5)
		vecs := make([][]unitAtom, 1+rng.IntN(40))
		for u := range vecs {
			for a := 0; a < nA; a++ {
				if rng.IntN(3) > 0 {
					vecs[u] = append(vecs[u], unitAtom{atom: a, sum: rng.Int64N(2001) - 500})
				}
			}
		}
		ladder, err := unitLadder(1+rng.Int64N(40), 50)
		if err != nil {
			t.Fatal(err)
		}
		clip, _, total, atoms, err := measureUnitDirect(dp.NewSeededSource(uint64(c)), vecs, nA, ladder, 1, 1e3, 0, 1e3, 1, measureMutNone)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int64, nA)
		var wantTotal int64
		for _, v := range vecs {
			n := new(big.Int)
			for _, e := range v {
				n.Add(n, big.NewInt(int64(math.Abs(float64(e.sum)))))
			}
			for _, e := range v {
				x := big.NewInt(int64(math.Abs(float64(e.sum))))
				if n.Cmp(big.NewInt(clip)) > 0 {
					x.Div(x.Mul(x, big.NewInt(clip)), n)
				}
				if e.sum < 0 {
					x.Neg(x)
				}
				want[e.atom] += x.Int64()
				wantTotal += x.Int64()
			}
		}
		tol := 30*float64(clip)/1e3 + 1
		if math.Abs(float64(total-wantTotal)) > tol {
			t.Fatalf("case %d: total %d, oracle %d at clip %d", c, total, wantTotal, clip)
		}
		for a := range atoms {
			if math.Abs(float64(atoms[a]-want[a])) > tol {
				t.Fatalf("case %d: atom %d = %d, oracle %d at clip %d", c, a, atoms[a], want[a], clip)
			}
		}
	}
}

// TestUnitLadder: 9 rungs from 1/16 of R·Δ to R·Δ, increasing, the top
// exact; tiny anchors collapse to distinct rungs ≥ 1; an overflowing
// product is refused.
func TestUnitLadder(t *testing.T) {
	l, err := unitLadder(256, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != MeasureUnitLadderRungs || l[0] != 800 || l[len(l)-1] != 12800 || l[4] != 3200 {
		t.Fatalf("ladder for R = 256, Δ = 50: %v", l)
	}
	for i := 1; i < len(l); i++ {
		if l[i] <= l[i-1] {
			t.Fatalf("not increasing: %v", l)
		}
	}
	if l, _ := unitLadder(1, 1); len(l) != 1 || l[0] != 1 {
		t.Fatalf("ladder for R = Δ = 1: %v", l)
	}
	if _, err := unitLadder(1<<40, 1<<30); err == nil {
		t.Fatal("an overflowing ladder was accepted")
	}
}

// TestReleaseMeasureUnitSQL releases a signed measure (amount in
// [−50, 400]) on the join customer ⋈ orders under privacy unit customer
// (2,000 customers, 6,000 orders, ε = 8, half to the measure) and checks
// with DuckDB on the file: the whole-file SUM(amount) is within 5% of the
// truth (its 95% noise is about 0.3% here), the workload box's SUM equals
// the release's fitted answer for it, the error scale names the clip, and
// the ledger holds the measure's three parts.
func TestReleaseMeasureUnitSQL(t *testing.T) {
	s := measureInstance(t, true, "  measures: [amount]\n  measures_share: 0.5\n")
	s.Privacy.Unit = "customer"
	s.Release.Method = spec.Auto
	s.Tables[0].PrimaryKey = []string{"c_key"}
	dir := t.TempDir()
	sum := release(t, s, dir, 7)
	m := sum.Measures[0]
	if !(m.ErrorScale.UnitClip > 0) || m.ErrorScale.SumSensitivity != m.ErrorScale.UnitClip {
		t.Fatalf("error scale %+v: want the clip as the sum sensitivity", m.ErrorScale)
	}
	db := releasetest.OpenDuckDB(t)
	path := releasetest.SQLString(filepath.Join(dir, layout.ParquetName))
	ordersCSV := releasetest.SQLString(s.Tables[1].Source)
	var got, want float64
	if err := db.QueryRow("SELECT SUM(amount) FROM read_parquet(" + path + ")").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT CAST(SUM(amount) AS DOUBLE) FROM read_csv_auto(" + ordersCSV + ", header = true) WHERE o_key < 2000").Scan(&want); err != nil {
		t.Fatal(err)
	}
	t.Logf("clip %v, whole-file SUM %v, true %v, total 95%% noise %v", m.ErrorScale.UnitClip, got, want, m.ErrorScale.TotalNoise95)
	if math.Abs(got-want) > 0.05*math.Abs(want) {
		t.Errorf("whole-file SUM(amount) %v, true %v: more than 5%% off", got, want)
	}
	var box float64
	if err := db.QueryRow("SELECT COALESCE(SUM(amount), 0) FROM read_parquet(" + path + ") WHERE seg IN ('a', 'b') AND lvl BETWEEN 1 AND 3").Scan(&box); err != nil {
		t.Fatal(err)
	}
	if m.LostSum == 0 && math.Abs(box-m.WorkloadAnswers[0]) > 1e-6*math.Max(1, math.Abs(box)) {
		t.Errorf("the file's box SUM %v, the release's fitted answer %v", box, m.WorkloadAnswers[0])
	}
	found := false
	for _, sp := range sum.Privacy.Spends {
		if !strings.HasPrefix(sp.Mechanism, "measures") {
			continue
		}
		found = true
		if sp.Delta != 0 || math.Abs(sp.Epsilon-0.5*s.Privacy.Epsilon) > 1e-9 || len(sp.Parts) != 1 || len(sp.Parts[0].Parts) != 3 {
			t.Fatalf("measures spend %+v, want (ε/2, 0) and one measure of three parts", sp)
		}
		var e float64
		for _, x := range sp.Parts[0].Parts {
			e += x.Epsilon
		}
		if math.Abs(e-sp.Epsilon) > 1e-9 {
			t.Errorf("the measure's parts add up to ε %v, want %v", e, sp.Epsilon)
		}
	}
	if !found {
		t.Error("no measures spend in the ledger")
	}
}

// TestShrinkAtoms: 8 atoms of true sum 10,000 each (rows in proportion),
// measured with Laplace noise of scale C/ε_A = 2,000 around the truth and
// a total of 80,000: over 300 draws the shrunk atoms' squared error is
// below half the raw atoms' (the rows' shape is the truth here), and the
// fitted atoms still add up to the total.
func TestShrinkAtoms(t *testing.T) {
	u, err := numerical.NewUniverse(numerical.Grid{Names: []string{"g"}, Sizes: []int{8}}, numerical.Measure{Name: "m", Min: 0, Max: 100}, numerical.UniverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	var rawSE, fitSE float64
	for range 300 {
		m := &measure{u: u, unit: true, nAtoms: 8, atomOf: []int{0, 1, 2, 3, 4, 5, 6, 7}, clip: 200, epsA: 0.1, atomNoise: 2000, totalDP: 80_000,
			rows: []int64{50, 50, 50, 50, 50, 50, 50, 50}}
		m.atomsDP = make([]float64, 8)
		for a := range m.atomsDP {
			m.atomsDP[a] = 10_000 + laplaceTest(rng, 2000)
			rawSE += math.Pow(m.atomsDP[a]-10_000, 2)
		}
		m.shrinkAtoms()
		var sum float64
		for _, x := range m.atomFit {
			fitSE += math.Pow(x-10_000, 2)
			sum += x
		}
		if math.Abs(sum-80_000) > 1e-6 {
			t.Fatalf("fitted atoms add up to %v", sum)
		}
	}
	t.Logf("squared error: raw %.3g, shrunk %.3g", rawSE, fitSE)
	if !(fitSE < rawSE/2) {
		t.Errorf("shrunk squared error %v not below half the raw %v", fitSE, rawSE)
	}
}

// laplaceTest draws a Laplace variate of scale b (test noise only).
func laplaceTest(rng *rand.Rand, b float64) float64 {
	x := rng.Float64() - 0.5
	return -b * math.Copysign(math.Log(1-2*math.Abs(x)), x)
}
