package hypergraph

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FoldStep is one public relation folded into a group.
type FoldStep struct {
	// Public is the folded public relation.
	Public string
	// Key lists its primary key columns, as declared.
	Key []string
	// On lists the join attributes it shares with the group at the time it
	// is folded, sorted: the join condition, which covers the key.
	On []string
	// Lossless reports that every attribute of Public occurs only in
	// relations of its group: then folding it leaves every term of residual
	// sensitivity unchanged (when the group's public members join
	// non-empty). Otherwise the folded bound may be looser (see [Fold]).
	Lossless bool
}

// Group is one relation of a folded hypergraph: a private (or unfolded
// public) relation and the public relations folded into it.
type Group struct {
	// Name is the relation's name in the folded hypergraph: its root's
	// name when nothing was folded into it, else [GroupName] of its
	// members.
	Name string
	// Members are the names of the original relations it joins: its root
	// first, then the folded public relations in fold order.
	Members []string
	// Steps describes each folded public relation, in fold order (one per
	// Members[1:]).
	Steps []FoldStep
}

// Folded reports whether the group joins several relations.
func (g Group) Folded() bool { return len(g.Members) > 1 }

// Folding is the result of [Fold]: the original and the folded hypergraph
// and the groups that map one to the other. It is immutable and safe for
// concurrent use.
type Folding struct {
	orig, folded *Hypergraph
	groups       []Group        // index-aligned with folded's relations
	member       map[string]int // original relation name -> group index
}

// GroupName is the name of a folded relation joining the given relations:
// their names joined by "+" (e.g. "customer+nation+region").
func GroupName(members []string) string { return strings.Join(members, "+") }

// MemberColumn is the name, in a folded relation joining several
// relations, of column column of member table: "table.column". Table names
// hold no dot (the spec refuses them), so the name is unambiguous.
func MemberColumn(table, column string) string { return table + "." + column }

// Fold folds the public relations of h whose primary key is covered by
// their join with a private relation into that relation. keys maps a public
// relation's name to its declared primary key columns; entries of private
// relations and empty keys are ignored (only public relations fold).
//
// In the folded hypergraph a group of one relation is that relation,
// unchanged (same name, attributes and columns); a group of several has
// the name [GroupName] of its members and maps each attribute to
// [MemberColumn] of the first member (in Members order) holding it. When
// nothing folds, the folded hypergraph is h itself.
//
// Errors wrap [ErrInvalid]: a key naming an unknown relation, an empty or
// repeated key column, or a folded name that collides with a relation's
// name.
//
// A public relation P whose primary key is covered by its join with a
// private relation R is a lookup: every tuple of R matches at most one tuple
// of P, and P never changes. [Fold] replaces R and P by the one relation
// R′ = R ⋈ P before any sensitivity is computed.
//
// # Definition
//
// Start with one group per relation. Repeatedly take the first public
// relation P (in the hypergraph's order) that is still a group of its own,
// has a declared primary key, and whose key columns all hold join
// attributes that some group G rooted at a private relation already
// contains; among such groups take the first (in the order of their roots).
// Merge P into G. Stop when no public relation qualifies. Each group then
// becomes one relation of the folded hypergraph, at the position of its
// root: the natural join (bag semantics) of its members, over the union of
// their attributes, private when its root is. A public relation whose key is
// not covered — no key declared, a key column that is not a join column, a
// key attribute no private group holds — stays a public relation of its
// own. The result depends on the hypergraph and the declared keys only,
// never on the data.
//
// Chains fold one link at a time: a public relation keyed by an attribute
// of a public relation already folded into G (region keyed by the regionkey
// of nation, folded into customer) is covered by G and folds into it too. A
// public relation that links two private relations (R1 ⋈ P ⋈ R2) folds into
// the first one that covers its key; R1′ then carries P's attributes and
// joins R2 through them.
//
// # Theorem (folding preserves the guarantees)
//
// Assume every folded P's key is unique (no two tuples of P agree on the
// key under the join's equality; [Fold] cannot check this, the engine does
// when it builds the folded relations — a check on public data). Write F(I)
// for the folded instance: G's relation is R ⋈ P_1 ⋈ … ⋈ P_k in fold order.
//
//  1. Same join: ⋈ of the relations of F(I) is ⋈ of the relations of I, by
//     associativity and commutativity of the natural join on bags. So the
//     join size, and the histogram of the join over any columns, are
//     unchanged.
//
//  2. Neighbours map to neighbours or to the same instance: let I′ add (or
//     remove) one tuple t of a private relation R, the root of G. Only G's
//     relation changes, by {t} ⋈ P_1 ⋈ … ⋈ P_k. That bag has at most one
//     tuple: P_1's key attributes are attributes of R, so t fixes P_1's key
//     and at most one tuple of P_1 matches; P_j's key attributes are
//     attributes of R, P_1, …, P_{j−1}, whose values are fixed by then, so
//     at most one tuple of P_j matches (and a public relation has
//     multiplicity one per key, duplicates being duplicate keys). Public
//     relations, folded or not, never change. So F(I′) = F(I) or F(I′) is a
//     neighbour of F(I) under DESIGN.md §3's relation on the folded
//     hypergraph (add or remove one tuple of one private relation), and
//     instances at distance k map to instances at distance ≤ k.
//
// Consequences. Every statistic that is an upper bound on the local
// sensitivity of the join count over the folded neighbours, or that has
// global sensitivity c over them, keeps that property over the original
// neighbours: the change of the join under an original neighbour is the
// change under a folded neighbour (or 0). In particular on the folded
// hypergraph: the maximum degree Δ of Alg. 1 bounds the local sensitivity
// and has global sensitivity 1; LŜ^k(F(I)) bounds the local sensitivity of
// every instance at distance ≤ k from I; RS^β(F(I)) ≥ LS(I) and
// RS^β(F(I′)) ≤ e^β·RS^β(F(I)) (a β-smooth upper bound, so ln RS^β has
// sensitivity β, Lemma 3.7); and T_E, join size and histograms computed on
// the folded relations are those of the original join. Algorithms 1 and 3
// run on the folded hypergraph are (ε, δ)-DP for the original neighbours.
//
// # Theorem (folding never lowers residual sensitivity)
//
// Folding does not make RS^β smaller: RS^β(F(I)) ≥ RS^β(I) for every
// instance, with equality when every fold step is [FoldStep.Lossless] and the
// public members of every group join non-empty. Its gains are elsewhere:
// fewer relations (2^m boundary queries), Alg. 1 instead of Alg. 3 when two
// relations remain, and Δ̃ = 1 when one does.
//
// Proof. The groups partition the relations, so for a set E′ of groups with
// union E, ∂E′ (folded) = ∂E (original) and T′_{E′}(F(I)) = T_E(I). In Def.
// 3.6 the private relations and the s_j correspond one to one, but the
// term of private i and E ⊆ P∖{i} is T_X with X = [m]∖{i}∖E in the original
// and T_Y in the folded join, Y = X minus the public members of the groups
// of i and E. Removing those public relations from X one at a time in fold
// order never lowers T: when P's key attributes lie in relations outside
// the current set X (the root and earlier members of P's group), every
// boundary value t of X fixes P's key, hence P's tuple p, and each join
// tuple of X in the group of t is a join tuple u of X∖{P} extended by p, all
// with the same ∂(X∖{P}) value (fixed by t and p): T_X ≤ T_{X∖{P}}. So
// every coefficient of the folded polynomial is at least the original
// one, and LŜ^k and RS^β follow. When a step is lossless, P's attributes
// meet only relations of its group, so in X the public members of a group
// whose root is outside X form components of their own, each with T ≤ 1
// (keys again) and T = 1 when their join is non-empty: T_X = T_Y. When a
// step is not lossless the inequality can be strict: R(k) ⋈ P(k, c) ⋈ S(c)
// with P = {(1, a)}, S = {a, b × 100}, R = {1} has LŜ^0 = 1, but after
// folding P into R the relation R′(k, c) may gain (·, b) — a tuple no
// neighbour of I can add — and LŜ^0(F(I)) = 100.
//
// # Only lossless folds are made
//
// Because a fold that is not lossless can loosen the bound (the example
// above: 100 instead of 1), Fold keeps only lossless steps: it folds, finds
// the first public relation whose step is not lossless, leaves it unfolded
// and folds again, until every step is lossless (each pass removes one
// candidate, so this ends). Folding then never changes RS^β and only
// removes relations — the ratings ⋈ users ⋈ movies and order-lines ⋈
// orders ⋈ customers ⋈ products shapes, where the public table is a leaf
// lookup, fold; a public table that links two private ones stays a relation
// of its own. The choice depends on the spec only.
func Fold(h *Hypergraph, keys map[string][]string) (*Folding, error) {
	skip := map[int]bool{}
	for {
		f, err := foldSkipping(h, keys, skip)
		if err != nil {
			return nil, err
		}
		lossy := ""
		for _, st := range f.Steps() {
			if !st.Lossless {
				lossy = st.Public
				break
			}
		}
		if lossy == "" {
			return f, nil
		}
		skip[h.Index(lossy)] = true
	}
}

// FoldAll folds every public relation whose key is covered, lossless or
// not, as described on [Fold] but without its lossless filter. Its result
// keeps the privacy guarantees (the first theorem) but can loosen RS^β (the
// second); releases use [Fold]. It exists for the tests of both theorems.
func FoldAll(h *Hypergraph, keys map[string][]string) (*Folding, error) {
	return foldSkipping(h, keys, nil)
}

// foldSkipping folds as described on [Fold], never folding the relations
// in skip, and marks each step lossless or not.
func foldSkipping(h *Hypergraph, keys map[string][]string, skip map[int]bool) (*Folding, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: fold: no hypergraph", ErrInvalid)
	}
	for _, name := range slices.Sorted(maps.Keys(keys)) {
		if h.Index(name) < 0 {
			return nil, fmt.Errorf("%w: fold: primary key of unknown relation %q", ErrInvalid, name)
		}
		for k, c := range keys[name] {
			if c == "" || slices.Contains(keys[name][:k], c) {
				return nil, fmt.Errorf("%w: fold: primary key %v of %q: empty or repeated column", ErrInvalid, keys[name], name)
			}
		}
	}
	m := h.Len()
	owner := make([]int, m) // relation -> root of its group
	for i := range owner {
		owner[i] = i
	}
	steps := make([][]FoldStep, m) // per root
	order := make([][]int, m)      // per root: folded members in fold order
	attrs := slices.Clone(h.mask)  // per root: attributes of its group
	keyAttrs := make([]uint64, m)  // per public relation: its key's attributes
	foldable := make([]bool, m)    // per public relation: a covered key is possible
	priv := h.Private()
	for i, r := range h.rels {
		key := keys[r.Name]
		if !r.Public || len(key) == 0 || skip[i] {
			continue
		}
		foldable[i] = true
		for _, c := range key {
			a, ok := attrOfColumn(r, c)
			if !ok {
				foldable[i] = false // a key column that joins nothing
				break
			}
			keyAttrs[i] |= 1 << uint(slices.Index(h.attrs, a))
		}
	}
	for {
		p, g := -1, -1
		for i := 0; i < m && p < 0; i++ {
			if !foldable[i] || owner[i] != i {
				continue
			}
			for j := 0; j < m; j++ {
				if j != i && owner[j] == j && priv.Has(j) && keyAttrs[i]&^attrs[j] == 0 {
					p, g = i, j
					break
				}
			}
		}
		if p < 0 {
			break
		}
		on := h.attrNames(h.mask[p] & attrs[g])
		owner[p] = g
		attrs[g] |= h.mask[p]
		order[g] = append(order[g], p)
		steps[g] = append(steps[g], FoldStep{Public: h.rels[p].Name, Key: slices.Clone(keys[h.rels[p].Name]), On: on})
	}
	f := &Folding{orig: h, member: map[string]int{}}
	var rels []Relation
	folded := false
	for i, r := range h.rels {
		if owner[i] != i {
			continue
		}
		g := Group{Name: r.Name, Members: []string{r.Name}, Steps: steps[i]}
		if len(order[i]) == 0 {
			rels = append(rels, r)
		} else {
			folded = true
			members := append([]int{i}, order[i]...)
			var set Set
			for _, k := range members[1:] {
				g.Members = append(g.Members, h.rels[k].Name)
			}
			for _, k := range members {
				set |= 1 << uint(k)
			}
			g.Name = GroupName(g.Members)
			rel := Relation{Name: g.Name, Public: r.Public, Attrs: map[string]string{}}
			for _, k := range members {
				for a, c := range h.rels[k].Attrs {
					if _, ok := rel.Attrs[a]; !ok {
						rel.Attrs[a] = MemberColumn(h.rels[k].Name, c)
					}
				}
			}
			for s, k := range members[1:] {
				g.Steps[s].Lossless = true
				for _, a := range h.attrNames(h.mask[k]) {
					if h.atom[a]&^set != 0 {
						g.Steps[s].Lossless = false
					}
				}
			}
			rels = append(rels, rel)
		}
		for _, name := range g.Members {
			f.member[name] = len(f.groups)
		}
		f.groups = append(f.groups, g)
	}
	if !folded {
		f.folded = h
		return f, nil
	}
	fh, err := New(rels)
	if err != nil {
		return nil, fmt.Errorf("fold: %w", err)
	}
	f.folded = fh
	return f, nil
}

// attrOfColumn returns the join attribute that column c of r holds.
func attrOfColumn(r Relation, c string) (string, bool) {
	for a, col := range r.Attrs {
		if col == c {
			return a, true
		}
	}
	return "", false
}

// Original is the hypergraph that was folded.
func (f *Folding) Original() *Hypergraph { return f.orig }

// Folded is the folded hypergraph: one relation per [Group], in the order
// of the groups' roots in the original hypergraph.
func (f *Folding) Folded() *Hypergraph { return f.folded }

// Groups returns the groups, index-aligned with the folded hypergraph's
// relations. The slice is a copy; its Members and Steps are shared and
// must not be modified.
func (f *Folding) Groups() []Group { return slices.Clone(f.groups) }

// Steps returns every fold step of every group, groups in order.
func (f *Folding) Steps() []FoldStep {
	var out []FoldStep
	for _, g := range f.groups {
		out = append(out, g.Steps...)
	}
	return out
}

// Into returns the name of the folded relation holding the original
// relation name, and whether it exists.
func (f *Folding) Into(name string) (string, bool) {
	g, ok := f.member[name]
	if !ok {
		return "", false
	}
	return f.groups[g].Name, true
}

// Locate returns where column column of the original relation table lives
// in the folded hypergraph: the folded relation and its column there
// ([MemberColumn] in a folded relation, column itself otherwise). It
// reports false for an unknown relation.
func (f *Folding) Locate(table, column string) (relation, col string, ok bool) {
	g, ok := f.member[table]
	if !ok {
		return "", "", false
	}
	if !f.groups[g].Folded() {
		return table, column, true
	}
	return f.groups[g].Name, MemberColumn(table, column), true
}
