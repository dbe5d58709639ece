package brute

import (
	"fmt"
	"slices"

	"github.com/synth-dp/synth/hypergraph"
)

// Fold returns the folded instance F(in) of a folding of in's hypergraph
// (f.Original() must be in.Hypergraph()'s): one relation per group of f,
// in the folded hypergraph's order, named as there, over the union of its
// members' attributes (in member order), holding the bag natural join of
// its members computed by nested loops. A group of one relation is that
// relation unchanged.
func Fold(in *Instance, f *hypergraph.Folding) *Instance {
	out := &Instance{Dom: in.Dom}
	byName := map[string]Relation{}
	for _, r := range in.Rels {
		byName[r.Name] = r
	}
	for _, g := range f.Groups() {
		root := byName[g.Members[0]]
		if !g.Folded() {
			out.Rels = append(out.Rels, cloneRelation(root))
			continue
		}
		rel := Relation{Name: g.Name, Public: root.Public}
		members := make([]Relation, len(g.Members))
		for k, name := range g.Members {
			members[k] = byName[name]
			for _, a := range members[k].Attrs {
				if !slices.Contains(rel.Attrs, a) {
					rel.Attrs = append(rel.Attrs, a)
				}
			}
		}
		binding := map[string]int{}
		var rec func(k int)
		rec = func(k int) {
			if k == len(members) {
				t := make([]int, len(rel.Attrs))
				for j, a := range rel.Attrs {
					t[j] = binding[a]
				}
				rel.Tuples = append(rel.Tuples, t)
				return
			}
			r := members[k]
			for _, t := range r.Tuples {
				if added, ok := bind(binding, r.Attrs, t); ok {
					rec(k + 1)
					unbind(binding, added)
				}
			}
		}
		rec(0)
		out.Rels = append(out.Rels, rel)
	}
	return out
}

func cloneRelation(r Relation) Relation {
	r.Attrs = slices.Clone(r.Attrs)
	ts := make([][]int, len(r.Tuples))
	for j, t := range r.Tuples {
		ts[j] = slices.Clone(t)
	}
	r.Tuples = ts
	return r
}

// Neighbours returns every neighbour of in: each tuple over the domain
// inserted into each private relation, and each existing tuple of each
// private relation removed (one copy).
func Neighbours(in *Instance) []*Instance {
	var out []*Instance
	for i, r := range in.Rels {
		if r.Public {
			continue
		}
		t := make([]int, len(r.Attrs))
		for {
			next := in.Clone()
			next.Rels[i].Tuples = append(next.Rels[i].Tuples, slices.Clone(t))
			out = append(out, next)
			p := 0
			for p < len(t) {
				t[p]++
				if t[p] < in.Dom {
					break
				}
				t[p] = 0
				p++
			}
			if p == len(t) {
				break
			}
		}
		for j := range r.Tuples {
			next := in.Clone()
			next.Rels[i].Tuples = slices.Delete(next.Rels[i].Tuples, j, j+1)
			out = append(out, next)
		}
	}
	return out
}

// Distance returns the number of single-tuple insertions and deletions
// that turn a into b, relation by relation (bag symmetric difference), or
// an error when the two differ in their relations or attributes.
func Distance(a, b *Instance) (int, error) {
	if len(a.Rels) != len(b.Rels) {
		return 0, fmt.Errorf("brute: %d relations against %d", len(a.Rels), len(b.Rels))
	}
	d := 0
	for i, r := range a.Rels {
		s := b.Rels[i]
		if r.Name != s.Name || !slices.Equal(r.Attrs, s.Attrs) || r.Public != s.Public {
			return 0, fmt.Errorf("brute: relation %d is %s(%v) against %s(%v)", i, r.Name, r.Attrs, s.Name, s.Attrs)
		}
		m, n := multiplicities(r), multiplicities(s)
		for k, x := range m {
			d += int(abs(x - n[k]))
		}
		for k, y := range n {
			if _, ok := m[k]; !ok {
				d += int(y)
			}
		}
	}
	return d, nil
}
