package dp

import (
	"sync"
	"sync/atomic"
)

// The truncated discrete Laplace and log-pad samplers are immutable (their
// Sample and Pad only read them) and deterministic functions of public
// parameters, but building one solves for τ′ ([TDLapTau]: logarithms and
// big rationals), which cost more than a whole run of a mechanism in the
// audits that prepare a plan per run (pmw's n̂, the uniformization's
// degree noise, join-as-one's Δ̃). [CachedTruncatedDiscreteLaplace] and
// [CachedLogPad] return the very sampler a fresh construction would, so
// outputs are unchanged; [PerStepEpsilon] is memoised the same way.
// Errors are not cached; the cache stops growing at memoMax entries (a
// release uses a handful).
const memoMax = 1024

type memoKey struct {
	log              bool // a LogPad or a TruncatedDiscreteLaplace
	eps, delta, beta float64
	sens             int64
}

var (
	memo      sync.Map // key (memoKey, perStepKey) → value
	memoCount atomic.Int64
)

// memoized returns the value memo holds for k, else builds it with f and
// stores it unless f fails or the memo is full.
func memoized[V any](k any, f func() (V, error)) (V, error) {
	if v, ok := memo.Load(k); ok {
		return v.(V), nil
	}
	v, err := f()
	if err != nil {
		return v, err
	}
	if memoCount.Load() < memoMax {
		if _, loaded := memo.LoadOrStore(k, v); !loaded {
			memoCount.Add(1)
		}
	}
	return v, nil
}

// CachedTruncatedDiscreteLaplace is [NewTruncatedDiscreteLaplace], memoised
// by its public parameters: callers share one immutable sampler.
func CachedTruncatedDiscreteLaplace(eps, delta float64, sens int64) (*TruncatedDiscreteLaplace, error) {
	return memoized(memoKey{eps: eps, delta: delta, sens: sens}, func() (*TruncatedDiscreteLaplace, error) {
		return NewTruncatedDiscreteLaplace(eps, delta, sens)
	})
}

// CachedLogPad is [NewLogPad], memoised by its public parameters: callers
// share one immutable sampler.
func CachedLogPad(eps, delta, beta float64) (*LogPad, error) {
	return memoized(memoKey{log: true, eps: eps, delta: delta, beta: beta}, func() (*LogPad, error) {
		return NewLogPad(eps, delta, beta)
	})
}
