package release

import (
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
)

// fanoutClipMech is the fan-out clip's choice on an edge where units
// with largest fan-out 2 number twoUnits: with ε = 0.4 the penalty 2/ε =
// 5 per rung makes 5 such units prefer τ = 1 (a tie: the first) and 6
// prefer τ = 2, the tipping pair of a neighbour (one unit added with its
// subtree).
func fanoutClipMech(twoUnits int64) func(dp.Source) float64 {
	return func(src dp.Source) float64 {
		return float64(chooseFanoutClip(src, map[int64]int64{0: 40, 1: 30, 2: twoUnits}, auditClipEps))
	}
}

const auditClipEps = 0.4

// TestAuditFanoutClip audits the tables release's fan-out clip (an
// exponential mechanism claimed ε-DP at ε_e, sensitivity 1) on a tipping
// pair of neighbours, 20,000 runs a side at confidence 1 − 10⁻⁶: the
// honest mechanism's ε lower bound stays at or below its claim, and the
// planted bug (the best clip taken without noise) is caught.
func TestAuditFanoutClip(t *testing.T) {
	const n = 20_000
	honest := audit.MustRunScalar(t, fanoutClipMech(5), fanoutClipMech(6), n, 0)
	if honest.EpsilonLowerBound > auditClipEps {
		t.Fatalf("honest fan-out clip: ε ≥ %.3f (event %s) above its claim %g", honest.EpsilonLowerBound, honest.Event, auditClipEps)
	}
	tablesMutation = mutTrueFanoutClip
	defer func() { tablesMutation = 0 }()
	mutant := audit.MustRunScalar(t, fanoutClipMech(5), fanoutClipMech(6), n, 0)
	if mutant.EpsilonLowerBound <= auditClipEps {
		t.Fatalf("planted bug (the clip chosen without noise) not caught: ε ≥ %.3f, claim %g", mutant.EpsilonLowerBound, auditClipEps)
	}
	t.Logf("fan-out clip audit: honest ε ≥ %.3f, mutant ε ≥ %.3f (claim %g)", honest.EpsilonLowerBound, mutant.EpsilonLowerBound, auditClipEps)
}
