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
// outputs are unchanged. Errors are not cached; the cache stops growing at
// memoMax entries (a release uses a handful).
const memoMax = 1024

type memoKey struct {
	log              bool // a LogPad or a TruncatedDiscreteLaplace
	eps, delta, beta float64
	sens             int64
}

var (
	memo      sync.Map // memoKey → *TruncatedDiscreteLaplace or *LogPad
	memoCount atomic.Int64
)

func memoStore(k memoKey, v any) {
	if memoCount.Load() < memoMax {
		if _, loaded := memo.LoadOrStore(k, v); !loaded {
			memoCount.Add(1)
		}
	}
}

// CachedTruncatedDiscreteLaplace is [NewTruncatedDiscreteLaplace], memoised
// by its public parameters: callers share one immutable sampler.
func CachedTruncatedDiscreteLaplace(eps, delta float64, sens int64) (*TruncatedDiscreteLaplace, error) {
	k := memoKey{eps: eps, delta: delta, sens: sens}
	if v, ok := memo.Load(k); ok {
		return v.(*TruncatedDiscreteLaplace), nil
	}
	t, err := NewTruncatedDiscreteLaplace(eps, delta, sens)
	if err != nil {
		return nil, err
	}
	memoStore(k, t)
	return t, nil
}

// CachedLogPad is [NewLogPad], memoised by its public parameters: callers
// share one immutable sampler.
func CachedLogPad(eps, delta, beta float64) (*LogPad, error) {
	k := memoKey{log: true, eps: eps, delta: delta, beta: beta}
	if v, ok := memo.Load(k); ok {
		return v.(*LogPad), nil
	}
	p, err := NewLogPad(eps, delta, beta)
	if err != nil {
		return nil, err
	}
	memoStore(k, p)
	return p, nil
}
