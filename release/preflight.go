package release

import (
	"github.com/synth-dp/synth/spec"
)

// Preflight runs every refusal of [Run] that needs no data and no output
// folder — the method and its checks, the universe and memory plan
// ([NewPlan]), the measures' plan (release.measures: grid, universe,
// share) and the method's budget split, charged to a throw-away ledger —
// and returns the plan (with RowsBudget set, as the charge stage sets it).
// It reads no data, touches no folder and spends nothing: `synth inspect`
// calls it so that it refuses exactly what a release would refuse before
// reading data. memCap 0 means the defaults, as in [Options].
func Preflight(s *spec.Spec, memCap int64) (*Plan, error) {
	p, err := NewPlan(s, memCap, 0, 0)
	if err != nil {
		return nil, err
	}
	if _, err := newRun(Options{Spec: s}).charge(p); err != nil {
		return nil, err
	}
	return p, nil
}
