// Package rangeset answers a set Q of range-count queries on one private
// table with one Laplace mechanism calibrated to the query set's L1
// sensitivity, bounded as in Inan, Kantarcioglu, Ghinita and Bertino,
// "Sensitivity Analysis of Differential Privacy via the Maximum Clique"
// (DESIGN.md §4): S_L1(Q) ≤ min(|Q|, 2·MCS(G)), where G is the graph of
// pairwise-intersecting query regions (their Thm. 6, 7 and Alg. 3).
//
// # Maximum clique = maximum depth
//
// Axis-parallel boxes have the Helly property (their Thm. 3): boxes that
// intersect pairwise share a point. So the maximum clique of G is the
// maximum depth of the box arrangement — the largest number of boxes with
// a common point — and [MaxDepth] computes it exactly by a sweep over the
// boxes' lower endpoints, dimension by dimension, instead of an NP-hard
// clique search. A record is a point, so the depth bounds the number of
// queries one record can change (with equality when a deepest point lies
// in the declared domains; the boxes are not clipped to them, which only
// makes the bound conservative).
//
// # Queries
//
// [Parse] reads COUNT(*) queries on one table through [relational.Parse]
// (the parser of synth answer): the WHERE clause is a conjunction of
// comparisons (=, <, <=, >, >=) and BETWEEN on integer, numeric and date
// columns, and = (or IN with one value) on categorical and boolean
// columns (a point of the declared domain). Each query is a box; a column
// it does not mention spans the whole line. Disjunctions, <>, NOT and IN
// lists are not boxes and are rejected ([ErrNotBox]).
//
// # Counting
//
// The true counts come from one aggregate over the table per block of up
// to 4,096 queries: every row is mapped to its elementary cell (per
// column, how many of the block's distinct box ends it passes, computed in
// SQL by a CASE over a few ends, a whole-number offset, or a lookup of the
// ends' buckets) and the rows are counted per occupied cell; Go adds each
// cell's count to the queries whose box holds it, found as the AND of
// per-column bitsets of the queries (one bitset per rank). The comparisons
// are those of the queries' own WHERE clauses, so the counts are theirs
// exactly (a test compares them with one FILTER aggregate per query). The
// cost is one scan plus, per occupied cell, |Q|/64 word ANDs per column:
// few cells when the ranges' ends sit on a coarse grid, up to one per row
// when they cut every column finely.
//
// # Guarantee
//
// [Release] adds discrete Laplace noise of scale S/ε to every count, S the
// sensitivity bound chosen by [Neighbours]: ε-DP, integers out (exact
// sampler, DESIGN.md §3 inv. 6). The bound depends on the queries and the
// declared domains only, never on the data.
package rangeset
