// Package pmw implements private multiplicative weights (PMW) over a dense
// universe: the single-table algorithm of Hardt, Ligett and McSherry (2012)
// run on the result J of a join, as the join-as-one and uniformized
// releases of Ghazi et al. use it (Alg. 2 and App. A; DESIGN.md §4).
//
// # Guarantee
//
// [Run] is (ε, δ)-DP under the tuple-DP neighbour relation (one tuple of
// one private relation added or removed) whenever the neighbour changes J
// by at most Δ̃ tuples ([Config.Sensitivity]). The budget splits in two
// halves: (ε/2, δ/2) for the noisy join size n̂ (truncated Laplace), and
// (ε/2, δ/2) for the T rounds, each an exponential-mechanism selection and
// a Laplace measurement with ε₀ from advanced (or basic) composition over 2T
// steps. Everything else — the multiplicative updates, the average of the
// iterates and the integer counts of [Result.Counts] — is post-processing.
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
// One round costs O(|X| · number of tables), not O(|X| · |Q|): all
// marginal-like families are answered by ONE pass over the dense weights
// that accumulates into every family's table at once (indices kept
// incrementally in mixed radix, split over [Config.Workers] goroutines with
// per-worker tables merged at the end); the update of a selected query
// touches only its support, and when that support is small the tables are
// patched on it instead of re-running the pass; weights stay unnormalised
// with a running total, and the average of the iterates is maintained
// lazily on the touched cells (see [Run]). Memory is 16 bytes per cell plus small tables; a universe
// whose estimate exceeds the cap ([DefaultMemoryCap]) is refused with
// [ErrTooLarge].
//
// # Not implemented
//
// Zero-concentrated DP accounting of the rounds, and floating-point-hardened
// noise (the samplers of package dp are float64). A Weighted family whose
// weight columns make the marginal over cols ∪ wcols as large as the
// universe works but multiplies memory by the number of workers.
package pmw
