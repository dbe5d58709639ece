package hypergraph

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"
)

// MaxRelations is the largest number of relations a [Hypergraph] holds.
const MaxRelations = 64

// ErrInvalid is wrapped by every error [New] returns.
var ErrInvalid = errors.New("hypergraph: invalid join")

// Relation is one hyperedge: a named relation and the join attributes it
// contains.
type Relation struct {
	// Name is the relation's name, unique in the hypergraph.
	Name string
	// Attrs maps each join attribute the relation contains to the name of
	// the relation's column that holds it.
	Attrs map[string]string
	// Public marks a relation that never changes between neighbouring
	// instances (DESIGN.md §3).
	Public bool
}

// Hypergraph is a join query: relations over a set of attributes.
type Hypergraph struct {
	rels  []Relation
	attrs []string       // sorted
	atom  map[string]Set // attribute -> relations containing it
	mask  []uint64       // per relation: bitmask over attrs
}

// Set is a set of relations, as a bitmask over their indices.
type Set uint64

// Has reports whether relation i is in s.
func (s Set) Has(i int) bool { return s&(1<<uint(i)) != 0 }

// Len is the number of relations in s.
func (s Set) Len() int { return bits.OnesCount64(uint64(s)) }

// Members lists the indices in s in increasing order.
func (s Set) Members() []int {
	out := make([]int, 0, s.Len())
	for v := uint64(s); v != 0; v &= v - 1 {
		out = append(out, bits.TrailingZeros64(v))
	}
	return out
}

// New builds a hypergraph. Relation names must be unique and non-empty.
func New(rels []Relation) (*Hypergraph, error) {
	if len(rels) == 0 {
		return nil, fmt.Errorf("%w: no relations", ErrInvalid)
	}
	if len(rels) > MaxRelations {
		return nil, fmt.Errorf("%w: %d relations, at most %d", ErrInvalid, len(rels), MaxRelations)
	}
	h := &Hypergraph{atom: map[string]Set{}}
	seen := map[string]bool{}
	for i, r := range rels {
		if r.Name == "" {
			return nil, fmt.Errorf("%w: relation %d has no name", ErrInvalid, i)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("%w: relation %q appears twice", ErrInvalid, r.Name)
		}
		seen[r.Name] = true
		attrs := make(map[string]string, len(r.Attrs))
		for a, c := range r.Attrs {
			attrs[a] = c
			h.atom[a] |= 1 << uint(i)
		}
		h.rels = append(h.rels, Relation{Name: r.Name, Attrs: attrs, Public: r.Public})
	}
	for a := range h.atom {
		h.attrs = append(h.attrs, a)
	}
	sort.Strings(h.attrs)
	if len(h.attrs) > 64 {
		return nil, fmt.Errorf("%w: %d join attributes, at most 64", ErrInvalid, len(h.attrs))
	}
	h.mask = make([]uint64, len(rels))
	for j, a := range h.attrs {
		for _, i := range h.atom[a].Members() {
			h.mask[i] |= 1 << uint(j)
		}
	}
	return h, nil
}

// Len is the number of relations m.
func (h *Hypergraph) Len() int { return len(h.rels) }

// All is the set of every relation [m].
func (h *Hypergraph) All() Set {
	if len(h.rels) == 64 {
		return ^Set(0)
	}
	return Set(1)<<uint(len(h.rels)) - 1
}

// Relation returns relation i. Its Attrs map is shared with the
// hypergraph and must not be modified.
func (h *Hypergraph) Relation(i int) Relation { return h.rels[i] }

// Relations returns the relations in index order. The slice is a copy; the
// Attrs maps are shared and must not be modified.
func (h *Hypergraph) Relations() []Relation { return append([]Relation(nil), h.rels...) }

// Index returns the index of the relation with the given name, or -1.
func (h *Hypergraph) Index(name string) int {
	for i, r := range h.rels {
		if r.Name == name {
			return i
		}
	}
	return -1
}

// Attributes returns every join attribute, sorted.
func (h *Hypergraph) Attributes() []string { return append([]string(nil), h.attrs...) }

// Atom returns atom(x): the relations that contain attribute x.
func (h *Hypergraph) Atom(x string) Set { return h.atom[x] }

// Names returns the names of the relations in s, in index order.
func (h *Hypergraph) Names(s Set) []string {
	var out []string
	for _, i := range s.Members() {
		out = append(out, h.rels[i].Name)
	}
	return out
}

// Private returns the set of relations not marked public.
func (h *Hypergraph) Private() Set {
	var s Set
	for i, r := range h.rels {
		if !r.Public {
			s |= 1 << uint(i)
		}
	}
	return s
}

func (h *Hypergraph) attrMask(s Set) uint64 {
	var m uint64
	for _, i := range s.Members() {
		m |= h.mask[i]
	}
	return m
}

func (h *Hypergraph) attrNames(m uint64) []string {
	var out []string
	for j, a := range h.attrs {
		if m&(1<<uint(j)) != 0 {
			out = append(out, a)
		}
	}
	return out
}

// AttrsOf returns the union of the attributes of the relations in s, sorted.
func (h *Hypergraph) AttrsOf(s Set) []string { return h.attrNames(h.attrMask(s)) }

// Boundary returns ∂E: the attributes of relations in e that also appear in
// a relation outside e, sorted. ∂∅ and ∂[m] are empty.
func (h *Hypergraph) Boundary(e Set) []string {
	in := h.attrMask(e)
	out := h.attrMask(h.All() &^ e)
	return h.attrNames(in & out)
}

// Components splits the relations in s into connected components, where two
// relations are adjacent when they share an attribute. Components are
// returned in order of their smallest member; Components(0) is empty.
func (h *Hypergraph) Components(s Set) []Set {
	var comps []Set
	left := s
	for left != 0 {
		first := bits.TrailingZeros64(uint64(left))
		comp := Set(1) << uint(first)
		attrs := h.mask[first]
		for grown := true; grown; {
			grown = false
			for _, i := range (left &^ comp).Members() {
				if h.mask[i]&attrs != 0 {
					comp |= 1 << uint(i)
					attrs |= h.mask[i]
					grown = true
				}
			}
		}
		comps = append(comps, comp)
		left &^= comp
	}
	return comps
}

// Connected reports whether the relations in s form one non-empty connected
// component.
func (h *Hypergraph) Connected(s Set) bool { return s != 0 && len(h.Components(s)) == 1 }

// Acyclic reports whether the join is α-acyclic, by the GYO reduction:
// repeatedly remove attributes that occur in one relation only and relations
// whose attributes are contained in another relation's; the join is acyclic
// when at most one relation remains.
func (h *Hypergraph) Acyclic() bool {
	edges := append([]uint64(nil), h.mask...)
	alive := make([]bool, len(edges))
	for i := range alive {
		alive[i] = true
	}
	for changed := true; changed; {
		changed = false
		// Remove attributes contained in one live edge only.
		for j := range h.attrs {
			bit := uint64(1) << uint(j)
			count, owner := 0, -1
			for i, e := range edges {
				if alive[i] && e&bit != 0 {
					count++
					owner = i
				}
			}
			if count == 1 {
				edges[owner] &^= bit
				changed = true
			}
		}
		// Remove edges contained in another live edge.
		for i := range edges {
			if !alive[i] {
				continue
			}
			for k := range edges {
				if k != i && alive[k] && edges[i]&^edges[k] == 0 {
					alive[i] = false
					changed = true
					break
				}
			}
		}
	}
	live := 0
	for _, a := range alive {
		if a {
			live++
		}
	}
	return live <= 1
}

// Hierarchical reports whether the join is hierarchical (Ghazi et al. §4.2).
// When it is not, the reason names two attributes whose atoms overlap
// without either containing the other.
func (h *Hypergraph) Hierarchical() (ok bool, reason string) {
	for a := 0; a < len(h.attrs); a++ {
		for b := a + 1; b < len(h.attrs); b++ {
			x, y := h.atom[h.attrs[a]], h.atom[h.attrs[b]]
			if x&y == 0 || x&^y == 0 || y&^x == 0 {
				continue
			}
			return false, fmt.Sprintf("attributes %s (in %s) and %s (in %s) share relations but neither's relations contain the other's",
				h.attrs[a], strings.Join(h.Names(x), ", "), h.attrs[b], strings.Join(h.Names(y), ", "))
		}
	}
	return true, ""
}
