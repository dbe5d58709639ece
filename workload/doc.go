// Package workload owns a spec's workload — the queries a release must
// keep accurate — as one concept, for everyone who reads it:
//
//   - the effective workload ([Effective]): the listed marginals, ranges
//     and numeric sums, the 1-way marginals a release adds, or every 1- and
//     2-way marginal when none is listed;
//   - the same families as PMW queries over the universe of the released
//     columns ([Families]), numeric sums as weighted families;
//   - the grid and box of a sum answered by a measure's numerical run
//     ([SumGrid], [SumBox]) and a condition's SQL on the synthetic file
//     ([ConditionSQL]);
//   - the true, synthetic and uniform answers of every family for
//     evaluate and its report ([Answer], [Answers], [Evaluate],
//     [Errors]).
//
// # Semantics
//
// A condition holds on a bin when the bin's representative value (the
// value the synthetic file holds, [synthfile.Decoder.Value]) satisfies it:
// PMW's weights, a measure's boxes, the SQL rendering and the true answers
// all use this one rule, so a sum computed with SQL on the synthetic file
// is the sum the mechanisms kept accurate.
//
// # Privacy
//
// [Effective], [Families], [SumGrid], [SumBox] and [ConditionSQL] read the
// spec alone: their outputs are public. [Answer], [Evaluate] and their
// results are computed from the private data and are never published:
// they carry [InternalLabel].
//
// # Who may import it
//
// The orchestration (package release), the CLI (inspect, evaluate) and the
// evaluation report (internal/report). It imports spec, engine, pmw,
// hypergraph, output/layout and output/synthfile (for the
// representative values), never package release or internal/cli.
package workload
