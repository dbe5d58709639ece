// Package relational answers SQL aggregate queries over the private tables
// of a spec directly under differential privacy (synth answer): the
// residual-sensitivity mechanism under tuple-level DP and R2T under
// user-level DP (Dong and Yi, "Query Evaluation under Differential
// Privacy", §3.2 and §4.2; DESIGN.md §4 "Relational direct answers").
//
// # Queries
//
// [Parse] hands the SQL to DuckDB's own parser (json_serialize_sql through
// the engine, see [Parser]) and turns the parse tree into a [Query]:
//
//	SELECT [g1, …,] COUNT(*) | SUM(expr) FROM t1 [a1], t2 [a2], … | t1 JOIN t2 ON …
//	[WHERE join equalities AND per-table selections] [GROUP BY g1, …]
//
// Each spec table appears at most once (no self-joins) and the join
// equalities must connect them. A selection reads the columns of one table:
// comparisons with constants (or with a column of the same table and type),
// BETWEEN, IN, AND, OR, NOT; constants are checked against the declared
// domains. SUM takes + - * over integer and numeric columns and constants,
// and division by a non-zero constant; its per-result bound B comes from
// the declared ranges by interval arithmetic. GROUP BY columns are
// categorical, boolean or unbinned integer columns, and the groups are the
// values of their declared domains ([Groups]), never the data's: a group
// is one more selection. Anything else is an error wrapping
// [ErrUnsupported] that names the construct (or [ErrInvalid] for names and
// values that do not fit the spec), inside a [*QueryError] naming the
// query.
//
// Everything is evaluated as SQL in the engine ([DB]): one view per table
// holds its selected rows (the selected sub-instance), T_E runs over the
// views (package residual), and the true answer and R2T's per-unit
// contributions are aggregate queries over their join.
//
// # Mechanisms
//
// Tuple-level DP (a neighbour adds or removes one tuple of one private
// relation): [ReleaseRS] with RS^β of the selected sub-instance, β from
// [RSConfig.Beta], a padded DP bound on RS^β ([dp.LogPad]) and exact
// discrete Laplace or Gaussian noise; δ must be > 0 ([ErrPureRS]).
//
// User-level DP (a neighbour deletes one tuple of a unit relation and every
// tuple that references it through the spec's foreign keys):
// [RaceToTheTop] over the LP truncation Q(I, τ) ([Truncation]), solved
// exactly by structure: a closed form for one unit, a max flow (Dinic,
// augmented along the τ ladder) for two, and an LP solver for three or
// more, which needs the clp build tag (package relational/clp, COIN-OR
// CLP); without it such queries fail with [ErrNeedsCLP].
//
// [Answer] runs a list of queries: d answers in all (GROUP BY counts one
// per group) share the budget evenly by basic composition, every share is
// charged to the ledger before any data is read, and each answer is an
// integer (clamped at 0 for a non-negative query) published with its noise
// scale, a 95% bound on its noise around the truncated query, a 95% lower
// bound on the true answer that covers the truncation bias, and the
// truncation threshold, all computed from public parameters and DP
// outputs only ([Result] says what each covers and why no upper bound
// on the bias exists under user-level DP). Several answers under a unit
// are better answered together by package multi.
//
// With [Options.Clip], when every query's join results belong to one unit,
// all answers are answered together by the clipped Laplace mechanism
// (answerClipped): a per-unit clip C drawn by the exponential mechanism
// over the public ladder ⌈2^(j/2)⌉ ≤ GS ([dp.ChooseClip], the unit
// release's row-count code), each unit's vector over the answers clipped
// to L1 norm C, and discrete Laplace noise of scale C/ε_N on each answer:
// pure ε-DP, error about C/ε — R2T's at the same threshold carries its
// ladder's factor L·ln(L/β). synth answer makes it the default for up to
// 10 answers (docs/answers.md).
//
// # Not implemented
//
// Projections (SPJA), self-joins, outer joins, HAVING, AVG/MIN/MAX,
// predicates across tables other than join equalities, negative summands
// under R2T (SUM needs a non-negative expression there), the multi-query
// mechanisms of DESIGN.md §4 here (a GROUP BY is plain composition; they
// live in package multi), and a
// spec-level GS_Q (it is an option, --gs).
package relational
