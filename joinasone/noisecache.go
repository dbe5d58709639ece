package joinasone

import (
	"sync"
	"sync/atomic"

	"github.com/synth-dp/synth/dp"
)

// The noise samplers of Δ̃ are immutable (their Sample only reads them)
// and a deterministic function of public parameters, but building one
// solves for τ′ (dp.TDLapTau), which was a third of Prepare's CPU in the
// audits that prepare a plan per run. They are memoised per parameters:
// a plan gets the very sampler a fresh construction would return, so
// outputs are unchanged. Errors are not cached. The cache stops growing
// at noiseCacheMax entries (a release uses a handful).
const noiseCacheMax = 1024

type noiseKey struct {
	log              bool // a LogPad (β used) or a TruncatedDiscreteLaplace
	eps, delta, beta float64
}

var (
	noiseCache sync.Map // noiseKey → *dp.TruncatedDiscreteLaplace or *dp.LogPad
	noiseCount atomic.Int64
)

func noiseStore(k noiseKey, v any) {
	if noiseCount.Load() < noiseCacheMax {
		if _, loaded := noiseCache.LoadOrStore(k, v); !loaded {
			noiseCount.Add(1)
		}
	}
}

// tdlap is dp.NewTruncatedDiscreteLaplace(eps, delta, 1), memoised.
func tdlap(eps, delta float64) (*dp.TruncatedDiscreteLaplace, error) {
	k := noiseKey{eps: eps, delta: delta}
	if v, ok := noiseCache.Load(k); ok {
		return v.(*dp.TruncatedDiscreteLaplace), nil
	}
	t, err := dp.NewTruncatedDiscreteLaplace(eps, delta, 1)
	if err != nil {
		return nil, err
	}
	noiseStore(k, t)
	return t, nil
}

// logPad is dp.NewLogPad(eps, delta, beta), memoised.
func logPad(eps, delta, beta float64) (*dp.LogPad, error) {
	k := noiseKey{log: true, eps: eps, delta: delta, beta: beta}
	if v, ok := noiseCache.Load(k); ok {
		return v.(*dp.LogPad), nil
	}
	p, err := dp.NewLogPad(eps, delta, beta)
	if err != nil {
		return nil, err
	}
	noiseStore(k, p)
	return p, nil
}
