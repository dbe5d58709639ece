// Package residual computes the residual sensitivity of a join count: the
// maximum boundary queries T_E for every set E of relations, the local
// sensitivity bounds LŜ^k and the β-residual sensitivity RS^β.
//
// Source: Ghazi, Hu, Kumar and Manurangsi, "Differentially Private Data
// Release over Multiple Tables" (PODS 2023), §3.3, Eq. (1) and Def. 3.6,
// which take residual sensitivity from Dong and Yi (see also the survey of
// Dong and Yi, "Query Evaluation under Differential Privacy", §3.2).
//
// # Definitions
//
// A join of m relations R_1..R_m is a hypergraph ([hypergraph.Hypergraph]);
// relation i has attributes x_i. For E ⊆ [m] the boundary ∂E is the set of
// attributes that occur both in a relation of E and in one outside E. The
// maximum boundary query (Eq. 1) is
//
//	T_E(I) = max_{t ∈ dom(∂E)} Σ_{t′ ∈ dom(∪_{i∈E} x_i): π_∂E t′ = t} Π_{i∈E} R_i(π_{x_i} t′),
//
// the largest join size of the relations in E grouped by their boundary
// values (R_i(u) is the multiplicity of tuple u, so duplicates count). T_∅ =
// 1, and a disconnected E factorises into the product over its components.
// Def. 3.6:
//
//	LŜ^k(I) = max_{s ∈ S^k} max_{i} Σ_{E ⊆ [m]∖{i}} T_{[m]∖{i}∖E}(I) · Π_{j∈E} s_j,
//	RS^β(I) = max_{k ≥ 0} e^{−βk} · LŜ^k(I),
//
// with S^k the non-negative integer vectors s with Σ s_j = k.
//
// # Public relations
//
// Neighbouring instances differ by one tuple of one private relation
// (DESIGN.md §3). A public relation j never changes, so s_j = 0 and i ranges
// over private relations only; public relations still take part in every
// T_E. A join whose relations are all public has no neighbours; the package
// reports [ErrNoPrivate] rather than a zero sensitivity.
//
// # Guarantee
//
// RS^β is a β-smooth upper bound on the local sensitivity of count(I):
// RS^β(I) ≥ LS(I) and RS^β(I′) ≤ e^β·RS^β(I) for neighbours I, I′. The
// package computes the statistic only; it adds no noise and spends no
// budget. Its outputs are true values of the private data and must reach a
// user only through a mechanism (Alg. 3 of Ghazi et al.: ln RS^β has global
// sensitivity β).
//
// # Computation
//
// [TE] asks a [BoundaryCounter] (the SQL engine) one query per connected
// non-empty proper subset of the relations and derives the others; m is at
// most [MaxRelations]. [LocalSensitivityAt] maximises a multilinear
// polynomial with non-negative coefficients over integer compositions of k
// by exact branch and bound. [RS] searches k < [SearchLimit], a cut-off
// proved in its doc comment. [Compute] does all three and returns a
// [Sensitivity].
//
// The exact search can take seconds to minutes for small β with many
// private relations (see [RS]). [RSContext] and [LocalSensitivityAtContext]
// poll a context every few thousand units of search work and return an
// error wrapping ctx.Err() once it is done; [Compute] passes its context to
// the queries and to the search. [RS] and [LocalSensitivityAt] run to
// completion.
//
// Not implemented: residual sensitivity with selections or projections
// (Dong and Yi's extensions), user-level DP, and computing T_E with
// AJAR/FAQ-width guarantees (the engine runs plain group-by queries).
package residual
