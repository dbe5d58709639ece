// Package numerical releases private answers to numerical queries — sums
// of a measure over the tuples that satisfy conditions — by the mechanism
// of Qiu, Dong, Yi, Wu and Li, "Releasing Private Data for Numerical
// Queries" (KDD '22), and runs the paper's three baselines for comparison.
//
// # Queries and universe
//
// A [Query] is w(t) = f_w([t]_R)·g(t) (Def. 4.1): f_w the indicator of a
// box over a public condition [Grid] (X/R), g the [Measure] with a public
// domain [Min, Max] declared in the spec, never read from the data. Values
// are integers in units of the resolution b (§5); a signed measure is split
// into w⁺ and w⁻ (§5), both answered by the same PMW. The [Universe] is the
// grid times a value axis: the full values 1…Δ, or, when that would exceed
// the memory cap, the reduced axis {1, 2, 4, …, 2^⌊log₂Δ⌋} of §4.1 on which
// a tuple becomes one element per set bit of its value (the group-privacy
// factor k = 1 + ⌊log₂ Δ⌋). Values equal to 0 add nothing to any query
// and are no element.
//
// # Mechanisms
//
//   - [Run]: Algorithm 2 with the private α of §6 (see its guarantee).
//   - [Normalization]: PMW on ℓ_w = w/Δ_w (the normalisation baseline; the
//     pmw package's numeric-sum family normalises the same way).
//   - [GlobalTruncation]: a private global threshold Δ̄ from noisy counts,
//     then PMW on min{w, Δ̄}/Δ̄.
//   - [Composition]: per query, R2T's truncation mechanism (Dong et al.
//     SIGMOD '22) with ε/|Q| each.
//
// All are (ε, δ)-DP under add/remove-one-tuple neighbours, with the
// per-tuple sensitivity Δ̃ of a join result ([Config.Sensitivity], from
// package joinasone) multiplying every sensitivity, exactly as for linear
// queries. Every noisy value is an integer drawn by an exact sampler of
// package dp; the exponential mechanism's float noise releases an index
// only.
//
// # Cost
//
// One evaluation of every derived query costs one pass over the dense
// weights plus, per (sign, kind, τ), a summed-area table over the grid;
// each query is then a few table lookups (inclusion–exclusion over the
// corners of its box). Memory is 24 bytes an element; [DefaultMemoryCap]
// bounds it.
//
// # Not implemented
//
// The range mechanism of §4.2; f_w other than box indicators (weights in
// [0, 1]); the private-radius reduction of an unbounded codomain (§5, last
// paragraph: our domains are declared).
package numerical
