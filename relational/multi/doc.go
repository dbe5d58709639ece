// Package multi answers d SJA queries at once under user-level DP with the
// mechanisms of Dong, Sun and Yi, "Better than Composition: How to Answer
// Multiple Relational Queries under Differential Privacy" (DESIGN.md §4,
// "Relational direct answers"): a GROUP BY with d groups, or d separate
// queries, share one truncation radius and one d-dimensional noise vector
// instead of d single-query runs with ε/d each.
//
// # Self-join-free queries (Alg. 1)
//
// Every join result references exactly one unit (one tuple of the unit
// relation, spec privacy.unit). Unit i's contributions to the d queries
// form a vector S_i(I) ∈ ℝ^d, computed in SQL ([Contributions]: one GROUP
// BY unit key, and group, per query), and the d answers are Σ_i S_i(I) — the
// d-dimensional sum-estimation problem. [Run] finds a truncation radius r̃
// by the sparse vector technique over Count(I, 2^j) − N (ε/10; with the
// jump start of Alg. 3, [SVT]), clips every S_i to ℓ2 norm r̃ and adds
// Gaussian noise scaled to r̃ (9ε/10, δ).
//
// # Guarantee
//
// (ε, δ)-DP under user-level DP (a neighbour deletes one unit and every
// tuple referencing it), for every instance; see [Run] for the proof sketch
// and the exact noise (discrete Gaussian on a public grid, DESIGN.md §3
// inv. 6).
//
// # Self-joins (§5.3, Alg. 2)
//
// When a join result references two or more units (an implicit self-join
// on the unit relation, e.g. a lineitem of one customer and one supplier),
// deleting a unit changes other units' contributions and the clipped sum
// has unbounded sensitivity. [RunSelfJoin], the polynomial version of
// Alg. 2, replaces Count by the value F̂(I, r) of a convex QCQP per radius
// (join results merged by their unit sets, [JoinGroups]), solved by Ipopt
// (build tag ipopt, package relational/ipopt); the jump start skips most
// programs. Ipopt's answer is not trusted: every point is made exactly
// feasible in Go before F̂ and Q̂ are computed from it, and a failed solve
// is repaired the same way instead of ending the run after the budget is
// charged ([ProgramReport], not DP). Without the tag such queries fail
// with [ErrNeedsIpopt] before any data is read.
//
// # Diagnostics are not DP
//
// [Result].Trace, [SelfJoinResult].Programs, SolveTime, Trace and Reports
// depend on the private instance. They are for the data custodian only;
// [Answer] returns none of them, and nothing may publish them.
//
// # Not implemented
//
// Negative summands (SUM needs a non-negative expression, as for R2T), and
// the zCDP accounting of the paper's footnote (we compose the SVT and the
// Gaussian mechanism by basic composition, as Theorem 4.2 does).
package multi
