package uniformize

import (
	"sync"
	"sync/atomic"

	"github.com/synth-dp/synth/dp"
)

// The degree noise dp.TruncatedDiscreteLaplace(ε, δ, 1) is immutable (its
// Sample only reads it) and a deterministic function of public
// parameters, but building one solves for τ′ (dp.TDLapTau), which was a
// fifth of a partition's CPU in the audits that partition once per run.
// It is memoised per (ε, δ): a caller gets the very sampler a fresh
// construction would return, so outputs are unchanged. Errors are not
// cached. The cache stops growing at tdlapCacheMax entries (a release
// uses a handful).
const tdlapCacheMax = 1024

var (
	tdlapCache sync.Map // [2]float64{ε, δ} → *dp.TruncatedDiscreteLaplace
	tdlapCount atomic.Int64
)

// tdlap is dp.NewTruncatedDiscreteLaplace(eps, delta, 1), memoised.
func tdlap(eps, delta float64) (*dp.TruncatedDiscreteLaplace, error) {
	k := [2]float64{eps, delta}
	if v, ok := tdlapCache.Load(k); ok {
		return v.(*dp.TruncatedDiscreteLaplace), nil
	}
	t, err := dp.NewTruncatedDiscreteLaplace(eps, delta, 1)
	if err != nil {
		return nil, err
	}
	if tdlapCount.Load() < tdlapCacheMax {
		if _, loaded := tdlapCache.LoadOrStore(k, t); !loaded {
			tdlapCount.Add(1)
		}
	}
	return t, nil
}
