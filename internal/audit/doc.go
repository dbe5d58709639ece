// Package audit estimates, from samples, a lower bound on the ε of a
// mechanism that claims (ε, δ)-differential privacy: a privacy audit
// (DESIGN.md §6). A mechanism that passes an audit is not proved private; a
// mechanism that fails one — whose empirical lower bound exceeds its claimed
// ε — is proved not to meet its claim, with the stated confidence.
//
// # Method
//
// The caller gives the mechanism on two neighbouring inputs D and D′ as two
// closures ([Mechanism]), or one closure taking the input ([Neighbours]).
// [Run] runs each N times and counts, for every event S of a family fixed in
// advance, how often the output falls in S. Clopper–Pearson intervals (exact
// binomial intervals from Beta quantiles) bound P[M(D) ∈ S] and
// P[M(D′) ∈ S]; if M is (ε, δ)-DP then P[M(D) ∈ S] ≤ e^ε·P[M(D′) ∈ S] + δ,
// so
//
//	ε ≥ ln((p_lo(S on D) − δ) / p_hi(S on D′)),
//
// and symmetrically with D and D′ exchanged. The result is the maximum over
// the events and both directions. Every interval has error probability
// α/(2m) for m events (Bonferroni), so all of them hold simultaneously with
// probability ≥ 1 − α and the reported bound is a valid lower bound on the
// true ε with confidence 1 − α, whichever event turns out to be the best.
//
// [RunScalar] audits a real-valued output with threshold events
// {x > t} and their complements {x ≤ t}. It picks the grid of thresholds
// from the pooled quantiles of a separate pilot run, so that the event
// family is fixed before the samples that estimate the probabilities are
// drawn and the Bonferroni correction stays valid. (A complement needs no
// extra correction: its Clopper–Pearson interval is the mirror of the
// event's, so both hold together.)
//
// # Vacuous audits
//
// An event that occurs in none of the runs on either input, or in all of
// them on both, carries no evidence ([Result].Degenerate counts them). When
// every event of the family is such, the statistic did not vary — e.g. a
// mechanism view that returns the same number on every run — and [Run] and
// [RunScalar] fail with [ErrVacuous] rather than report a bound of 0 that
// no mechanism could exceed.
//
// # Not implemented
//
// No search for optimal events beyond thresholds (DP-Sniper-style
// classifiers); no Rényi or f-DP audits. Mechanisms with δ > 0 whose
// privacy loss concentrates on rare outputs need N large compared with 1/δ
// to be caught at all.
//
// # Randomness and concurrency
//
// Each worker draws from its own [dp.Source]: fresh crypto sources by
// default, seeded ones when [Options].Seed is set (for reproducible tests).
// Mechanism closures are called concurrently from several goroutines, each
// with its own source, and must be safe for that.
package audit
