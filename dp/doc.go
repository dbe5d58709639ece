// Package dp holds the noise and accounting primitives every synth
// mechanism stands on: the randomness [Source], Laplace and truncated
// Laplace noise, the exponential mechanism, composition rules and the
// privacy ledger.
//
// # Randomness
//
// Noise is drawn only from a [Source]. [NewSource] keys a ChaCha8 generator
// from crypto/rand; [NewSeededSource] is reproducible and marks a run not
// private. Nothing here reads math/rand globals.
//
// # Parameters
//
// Functions that take privacy parameters from users return errors wrapping
// [ErrInvalidParameter] for NaN, ±Inf, ε ≤ 0 or δ outside its range.
// Samplers called with parameters a mechanism has already validated panic
// on programmer error, as documented on each.
package dp
