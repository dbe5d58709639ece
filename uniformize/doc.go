// Package uniformize releases synthetic data for a join by degree-
// uniformized partitions: Algorithms 4–7 of Ghazi, Hu, Kumar and
// Manurangsi, "Differentially Private Data Release over Multiple Tables"
// (PODS 2023), §4. The instance is split into sub-instances whose join
// values have similar (noisy) degrees, join-as-one runs on each with a
// sensitivity bound fitted to its bucket, and the release is the union of
// the sub-instances' synthetic rows.
//
// [TwoTable] is Alg. 4 with Alg. 5 for a join of two relations (after the
// public lookups are folded); its doc comment states and proves the
// guarantee. [Hier] is Alg. 6/7 for a hierarchical join (the attribute
// tree of [NewTree], the partition of [PartitionHierarchical]) with Alg. 3
// on every sub-instance; a tuple may sit in up to K sub-instances and the
// budget is divided accordingly (see [HierBudget]). [ChooseMethod] says
// which method release.method: auto picks, and why.
//
// # Sub-instances
//
// Both releases are Alg. 4: a partition P, (ε/2, δ/2)-DP, chooses a list
// of sub-instances, each the relations restricted to some join values; then
// join-as-one (Alg. 1 on two relations, Alg. 3 on more) runs on every
// sub-instance of the list with (ε/(2k), δ/(2k)), where k is a public
// bound on the sub-instances one tuple lies in — k = 1 for the two-table
// buckets, which are disjoint, and k = K = [Tree.Multiplicity](L) for the
// hierarchical sub-instances (Lemma 4.10) — and the release is the union
// of their rows. [TwoTable] and [Hier] share this run; each proves the two
// facts about its partition that the proof below takes as given: P is
// (ε/2, δ/2)-DP, and the list is a function of P's output and public
// parameters only (no sub-instance is skipped for being empty: that would
// make the runs depend on the data without noise).
//
// Guarantee: (ε, δ)-DP for neighbours that add or remove one tuple of one
// private relation. Proof. Condition on P's output: the same sub-instances
// run on both neighbours, with the same budgets. The neighbours'
// sub-instances coincide except the at most k that hold the changed tuple
// (a tuple whose join value is NULL joins nothing and lies in none), which
// differ by that one tuple. join-as-one is (ε/(2k), δ/(2k))-DP on each
// (Ghazi et al. Lemma 3.2 or 3.7; package joinasone) with its own
// randomness, so the runs on the unaffected sub-instances have equal
// output distributions, and basic composition over the at most k affected
// ones gives (ε/2, δ/2): parallel composition when k = 1 (Lemma 4.1); for
// k > 1 it is the group-privacy step of Lemma 4.11 done by composition,
// which avoids group privacy's e^{(k−1)ε′} factor on δ. Basic composition
// with P: (ε, δ). What leaves a run — its synthetic counts, merged into one
// sum as soon as it finishes, its DP n̂, Δ̃ and rows, and their totals — is
// post-processing of DP outputs. ∎
//
// The ledger says the same: (ε/2, δ/2) charged for P, (ε/2, δ/2) reserved
// for the sub-instances and split among the ones that run with
// dp.Ledger.SplitOverlap(k), each join-as-one run charging its own
// (ε/(2k), δ/(2k)).
package uniformize
