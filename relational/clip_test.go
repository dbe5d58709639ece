package relational

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
)

// clipUnits makes vectors of n units with rows join rows each, all in
// answer 0 (counts, in steps of ClipStep).
func clipUnits(n int, rows uint64) [][]clipEntry {
	out := make([][]clipEntry, n)
	for i := range out {
		out[i] = []clipEntry{{k: 0, steps: rows * uint64(1/ClipStep)}}
	}
	return out
}

// clipOracle is Σ_u x_{u,k} of runClip before noise, by big-integer
// arithmetic: x = ⌊v·cs/‖v‖₁⌋ when ‖v‖₁ > cs.
func clipOracle(vecs [][]clipEntry, d int, clip int64) []int64 {
	cs := big.NewInt(clip * int64(1/ClipStep))
	out := make([]int64, d)
	for _, v := range vecs {
		n := new(big.Int)
		for _, e := range v {
			n.Add(n, new(big.Int).SetUint64(e.steps))
		}
		for _, e := range v {
			x := new(big.Int).SetUint64(e.steps)
			if n.Cmp(cs) > 0 {
				x.Div(x.Mul(x, cs), n)
			}
			out[e.k] += x.Int64()
		}
	}
	return out
}

// TestRunClipOracle checks runClip's clipped sums against clipOracle on
// random vectors: at ε_N = 600 the noise's scale is C/600 rows, and the
// sums must lie within 25 scales of the oracle's (a false failure has
// probability below d·e^{−25} per case).
func TestRunClipOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for c := 0; c < 50; c++ {
		d := 1 + rng.IntN(6)
		vecs := make([][]clipEntry, 1+rng.IntN(30))
		for u := range vecs {
			for k := 0; k < d; k++ {
				if rng.IntN(3) > 0 {
					vecs[u] = append(vecs[u], clipEntry{k: k, steps: uint64(rng.IntN(200)) * uint64(1+rng.IntN(4096))})
				}
			}
		}
		ladder := dp.ClipLadder(int64(1 + rng.IntN(300)))
		clip, sums, scale, err := runClip(dp.NewSeededSource(uint64(c)), vecs, d, ladder, 1, 600, clipMutNone)
		if err != nil {
			t.Fatal(err)
		}
		if want := float64(clip) / ClipStep / 600; math.Abs(scale-want) > 1e-9*want {
			t.Fatalf("case %d: noise scale %v steps, want C/ε_N = %v", c, scale, want)
		}
		want := clipOracle(vecs, d, clip)
		for k := range sums {
			if math.Abs(float64(sums[k]-want[k])) > 25*scale {
				t.Fatalf("case %d: answer %d = %d steps, oracle %d at clip %d (scale %v)", c, k, sums[k], want[k], clip, scale)
			}
		}
	}
}

// TestClipLadder checks the public ladder: ⌈2^(j/2)⌉ without repeats, the
// top appended when off the ladder, and the unit release's 41 rungs up to
// 2²⁰.
func TestClipLadder(t *testing.T) {
	l := dp.ClipLadder(1 << 20)
	if len(l) != 40 || l[0] != 1 || l[1] != 2 || l[2] != 3 || l[len(l)-1] != 1<<20 {
		t.Fatalf("ladder to 2²⁰: %v", l)
	}
	if l := dp.ClipLadder(139); l[len(l)-1] != 139 || l[len(l)-2] != 128 {
		t.Fatalf("ladder to 139: %v", l)
	}
}

// clipAuditMech runs runClip on vecs and returns what out picks from the
// published outputs (the clip, or the first noisy sum).
func clipAuditMech(t *testing.T, vecs [][]clipEntry, ladder []int64, mut clipMutation, clipOut bool) audit.Mechanism[float64] {
	return func(src dp.Source) float64 {
		clip, sums, _, err := runClip(src, vecs, 1, ladder, 0.3, 0.7, mut)
		if err != nil {
			panic(err)
		}
		if clipOut {
			return float64(clip)
		}
		return float64(sums[0])
	}
}

// clipAuditPairs are the neighbouring pairs of the clipped mechanism's
// audits at ε = 1 (0.3 to the clip): "heavy" deletes one of 21 units of 64
// rows (the clip lands at 64, so the sum moves by C: noise calibrated to
// one row shows it); "tipping" deletes one of 4 units of 2 rows, which
// moves the clip's best score from C = 2 (−0 − 1/0.3) to C = 1 (−3): a clip
// chosen without noise tells the two apart.
var clipAuditPairs = []struct {
	name     string
	d, dp    [][]clipEntry
	ladder   []int64
	clipOut  bool
	mutation clipMutation
}{
	{"heavy", clipUnits(21, 64), clipUnits(20, 64), dp.ClipLadder(128), false, clipMutRowNoise},
	{"tipping", clipUnits(4, 2), clipUnits(3, 2), dp.ClipLadder(128), true, clipMutTrueClip},
}

// TestAuditClip audits the clipped mechanism as shipped at its claimed
// ε = 1 (δ = 0) on both pairs; each bound holds with confidence 1 − 10⁻⁶.
func TestAuditClip(t *testing.T) {
	for _, p := range clipAuditPairs {
		res := audit.MustRunScalar(t, clipAuditMech(t, p.d, p.ladder, clipMutNone, p.clipOut), clipAuditMech(t, p.dp, p.ladder, clipMutNone, p.clipOut), auditRuns(), 0)
		t.Logf("%s: ε ≥ %.3f (event %s)", p.name, res.EpsilonLowerBound, res.Event)
		if res.EpsilonLowerBound > 1 {
			t.Errorf("%s: empirical ε lower bound %v > claimed 1 (event %s)", p.name, res.EpsilonLowerBound, res.Event)
		}
	}
}

// TestAuditClipMutant plants each bug into the clipped mechanism — the
// clip chosen from the true scores (no noise), the noise scaled to one row
// instead of the clip — and requires the audit of its pair to prove the
// claim ε = 1 false (lower bound > 1 at confidence 1 − 10⁻⁶). 3,000 runs
// per input: each mutant's event has about all runs on one side and none
// on the other.
func TestAuditClipMutant(t *testing.T) {
	for _, p := range clipAuditPairs {
		res := audit.MustRunScalar(t, clipAuditMech(t, p.d, p.ladder, p.mutation, p.clipOut), clipAuditMech(t, p.dp, p.ladder, p.mutation, p.clipOut), 3_000, 0)
		t.Logf("%s mutant: ε ≥ %.3f (event %s)", p.name, res.EpsilonLowerBound, res.Event)
		if !(res.EpsilonLowerBound > 1) {
			t.Errorf("%s mutant not caught: ε lower bound %v ≤ 1", p.name, res.EpsilonLowerBound)
		}
	}
}
