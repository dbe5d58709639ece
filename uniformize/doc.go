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
package uniformize
