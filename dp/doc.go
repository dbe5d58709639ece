// Package dp holds the noise and accounting primitives every synth
// mechanism stands on: the randomness [Source], the samplers, composition
// rules, the privacy ledger and its report.
//
// # Randomness
//
// Noise is drawn only from a [Source]. [NewSource] keys a ChaCha8 generator
// from crypto/rand; [NewSeededSource] is reproducible and marks a run not
// private ([PrivacySeeded]). Nothing here reads math/rand globals. Sources
// are not safe for concurrent use: give each goroutine its own.
//
// # Samplers
//
//   - [Laplace]: Lap(b); ε-DP for L1 sensitivity Δ with b = Δ/ε.
//   - [TLap] with [Tau]: truncated shifted Laplace on [0, 2τ]; (ε, δ)-DP,
//     never lowers the value (Ghazi et al. §2). Continuous: for analysis
//     and tests only; mechanisms pad with its integer analogue.
//   - [TruncatedDiscreteLaplace] with [TDLapTau]: the exact integer TLap on
//     {0, …, 2τ′}; (ε, δ)-DP for integer statistics, never lowers them. It
//     pads n̂ and Alg. 1's Δ̃.
//   - [LogPad]: the integer form of Alg. 3's e^TLap factor, ln of the bound
//     on the public grid [LogGrid]; (ε, δ)-DP, never below its input.
//   - [Gaussian] with [SigmaAnalytic] (Balle–Wang 2018) or [SigmaClassical]
//     (Dwork–Roth Thm. A.1); (ε, δ)-DP for L2 sensitivity Δ; ρ-zCDP with
//     [SigmaForRho].
//   - [Exponential]: the exponential mechanism; ε-DP for score sensitivity Δ
//     (float64 Gumbel-max: tests and baselines only).
//   - [ExponentialGrid]: the exponential mechanism on scores snapped to a
//     public power-of-two grid, sampled exactly with integer arithmetic;
//     ε-DP (and ε-bounded range) for score sensitivity Δ given a bound on
//     the scores' float error. Mechanisms select with it.
//   - [AboveThreshold] and [AboveThresholdJumpStart]: the sparse vector
//     technique (Dong–Sun–Yi Lemma 3.8 and Alg. 3); ε-DP.
//   - [DiscreteLaplace] / [NewDiscreteLaplace] and [DiscreteGaussian] /
//     [NewDiscreteGaussian]: exact integer samplers of Canonne–Kamath–
//     Steinke 2020 (Algs. 1–3), with [BernoulliExp]; ε-DP and ρ-zCDP.
//
// # Floating-point safety
//
// Mironov (CCS 2012) showed that textbook floating-point Laplace samplers
// leak through the low-order bits of their output. Only the discrete
// samplers ([DiscreteLaplace], [DiscreteGaussian], [BernoulliExp]) are safe
// against this: they use integer arithmetic on random words and their
// output is exactly distributed. [Laplace], [TLap] and [Gaussian]
// compute in float64 and are NOT hardened; [Exponential] and the SVT
// release only an index, so the low-bit attack does not apply directly, but
// their noise is still a float64 approximation. Nothing a mechanism
// publishes (the report, the Parquet metadata, the log, direct answers) may
// be a raw float from a continuous sampler (DESIGN.md §3, invariant 6):
// integer statistics are padded or noised with the discrete samplers
// ([TruncatedDiscreteLaplace], [DiscreteLaplace], [DiscreteGaussian]),
// multiplicative bounds with [LogPad], whose output is an integer grid
// index. A float sampler may only feed values that are themselves never
// published and whose published consequences are integers. Since the
// exact replacements (relational/multi's SVT and T̂ on integer grids,
// PMW's measurement on a public grid, [ExponentialGrid] for every
// selection) no production code outside this package calls a float
// sampler, and TestNoFloatSamplerInProduction keeps it so. [Laplace],
// [TLap], [Gaussian], [Exponential] and the float SVT ([AboveThreshold],
// [AboveThresholdJumpStart]) stay for tests, audit baselines (the flawed
// mechanisms the audits must catch) and analysis.
//
// # Composition and accounting
//
// [BasicComposition], [ParallelComposition], [GroupPrivacy],
// [AdvancedEpsilon] / [PerStepEpsilon] (advanced composition), and zCDP:
// [RhoGaussian], [RhoPure], [ComposeRho], [RhoToEpsilon] (Canonne–Kamath–
// Steinke conversion), [RhoToEpsilonSimple] (Bun–Steinke), [RhoForBudget].
// A [Ledger] is a run's budget as a state machine: each [Spend] names the
// mechanism, its (ε, δ) or ρ and the composition rule; a spend that would
// exceed the total is refused and changes nothing, so mechanisms charge
// before they read data. [Ledger.Report] builds the JSON privacy [Report].
//
// # Parameters
//
// Functions that take privacy parameters from users return errors wrapping
// [ErrInvalidParameter] for NaN, ±Inf, ε ≤ 0 or δ outside its range.
// Samplers called with parameters a mechanism has already validated panic
// on programmer error, as documented on each.
//
// # Not implemented
//
// Mironov's snapping mechanism for float Laplace (we use integer samplers
// and grids instead), Rényi-DP
// accounting, privacy amplification by subsampling, and the monotone-query
// variant of SVT with smaller noise (Lyu et al. 2017).
package dp
