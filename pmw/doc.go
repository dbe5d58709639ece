// Package pmw implements private multiplicative weights (PMW) over a dense
// universe: the single-table algorithm of Hardt, Ligett and McSherry (2012)
// run on the result J of a join, as the join-as-one and uniformized
// releases of Ghazi et al. use it (Alg. 2 and App. A; DESIGN.md §4).
//
// # Variants and guarantee
//
// [Run] is (ε, δ)-DP under the tuple-DP neighbour relation (one tuple of
// one private relation added or removed) whenever the neighbour changes J
// by at most Δ̃ tuples ([Config.Sensitivity]). Two variants
// ([Config.Variant]):
//
//   - [VariantMWEM] (the default): practical MWEM in the style of AIM. A
//     small share s of the budget pads n̂ (truncated discrete Laplace); the
//     rest is spent in zCDP (discrete Gaussian; or pure ε-DP with discrete
//     Laplace, [Config.Noise]) on the noisy 1-way marginals of every
//     column, which give the starting point, then on rounds that select a
//     whole workload marginal by the exponential mechanism and measure all
//     its cells at once, with budget annealing. Every measurement is
//     re-fitted by multiplicative weights after every round. The output
//     sums to [Result.Rows], an unbiased DP estimate of |J|.
//   - [VariantPaper]: PMW as App. A states it: (ε/2, δ/2) for n̂, uniform
//     start, T rounds of one query each (exponential mechanism and Laplace
//     measurement, advanced composition), the average of the iterates.
//
// Everything but the noisy measurements — the multiplicative updates, the
// fits, the averages, the integer counts of [Result.Counts] — is
// post-processing. Published values (n̂, the row count, T) are integers
// drawn or rounded with the exact samplers of package dp (DESIGN.md §3,
// invariant 6).
//
// # Universe and queries
//
// A [Universe] is the product of the released columns' binned domains,
// indexed in mixed radix with the first column most significant, the
// engine's histogram cell index. Queries come in families ([Family]):
// [Marginal] (every cell of a marginal), [Range] (every range of an ordered
// column within each cell of a marginal), [Weighted] (a marginal whose
// cells carry a per-cell weight in [−1, 1], for numerical queries) and
// [Linear] (explicit sparse queries). Every query takes values in [−1, 1].
//
// # Cost
//
// All marginal-like families are answered by ONE pass over the dense
// weights that accumulates into every family's table at once (indices kept
// incrementally in mixed radix, split over [Config.Workers] goroutines with
// per-worker tables merged at the end). [VariantMWEM] fuses its
// multiplicative update into that same pass (one pass per sweep) and walks
// the weights as a loop nest in a column order of its own, so that most
// tables cost one update per subtree rather than per cell. [VariantPaper]
// touches only a selected query's support per update, patching the tables
// when the support is small, and keeps the average of the iterates lazily.
// Memory is at most 16 bytes per cell plus small tables, and the
// histogram handed to Run (at most |X| cells); [CheckMemory] counts all of
// it from the universe and the families alone, Run calls it first, and a
// need above the cap ([DefaultMemoryCap]) is refused with [ErrTooLarge]
// before the histogram is read.
//
// # Not implemented
//
// [VariantPaper] accounts its rounds by advanced composition only. [VariantMWEM] keeps explicit [Linear] queries in
// the workload but never selects them (they are no marginal). A Weighted
// family whose weight columns make the marginal over cols ∪ wcols as large
// as the universe works but multiplies memory by the number of workers.
package pmw
