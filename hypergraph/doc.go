// Package hypergraph models a natural join query as a hypergraph: every
// relation is a hyperedge over the join attributes (join variables) it
// contains.
//
// Notation follows Ghazi, Hu, Kumar and Manurangsi, "Differentially Private
// Data Release over Multiple Tables" (PODS 2023), §2 and §3.3: for a set E of
// relations, the boundary ∂E is the set of attributes that appear both in a
// relation of E and in a relation outside E; atom(x) is the set of relations
// that contain attribute x. A join is hierarchical (their §4.2) when for any
// two attributes x, y, atom(x) ⊆ atom(y), atom(y) ⊆ atom(x) or the two are
// disjoint.
//
// [Fold] folds public lookup relations — public relations joined on their
// primary key to a private one — into that private relation, so that
// sensitivity is computed on fewer relations; its doc comment proves that
// statistics of the folded join keep their guarantees.
//
// Sets of relations are bitmasks ([Set]); a hypergraph holds at most 64
// relations. Hypergraphs are immutable after [New] and safe for concurrent
// use.
package hypergraph
