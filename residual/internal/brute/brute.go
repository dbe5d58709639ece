// Package brute holds brute-force oracles for the residual package's tests:
// small join instances given as Go slices, a [residual.BoundaryCounter] that
// enumerates joins with nested loops over tuples, an independent evaluation
// of T_E straight from Eq. (1) of Ghazi et al. by enumerating every
// assignment of domain values, and the true local sensitivity of the join
// count by trying every single-tuple insertion and deletion.
//
// Everything here is exponential in the number of attributes and meant for
// instances with a handful of attributes over domains of two or three
// values. Not safe for concurrent use.
package brute

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
)

// Relation is a bag of tuples over named attributes.
type Relation struct {
	Name   string
	Attrs  []string // distinct attribute names, the tuple's column order
	Public bool
	Tuples [][]int // values in [0, Dom); duplicates allowed
}

// Instance is a join instance over a common domain {0, …, Dom−1}.
type Instance struct {
	Dom  int
	Rels []Relation
}

// Clone returns a deep copy.
func (in *Instance) Clone() *Instance {
	out := &Instance{Dom: in.Dom, Rels: make([]Relation, len(in.Rels))}
	for i, r := range in.Rels {
		r.Attrs = slices.Clone(r.Attrs)
		ts := make([][]int, len(r.Tuples))
		for j, t := range r.Tuples {
			ts[j] = slices.Clone(t)
		}
		r.Tuples = ts
		out.Rels[i] = r
	}
	return out
}

// String renders the instance compactly for failure messages.
func (in *Instance) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dom=%d", in.Dom)
	for _, r := range in.Rels {
		pub := ""
		if r.Public {
			pub = " public"
		}
		fmt.Fprintf(&b, " %s(%s)%s%v", r.Name, strings.Join(r.Attrs, ","), pub, r.Tuples)
	}
	return b.String()
}

// Hypergraph returns the join hypergraph: one relation per relation, every
// attribute stored in the column named by its lower-cased name.
func (in *Instance) Hypergraph() (*hypergraph.Hypergraph, error) {
	rels := make([]hypergraph.Relation, len(in.Rels))
	for i, r := range in.Rels {
		attrs := map[string]string{}
		for _, a := range r.Attrs {
			attrs[a] = strings.ToLower(a)
		}
		rels[i] = hypergraph.Relation{Name: r.Name, Attrs: attrs, Public: r.Public}
	}
	return hypergraph.New(rels)
}

// Counter is a [residual.BoundaryCounter] over an instance that enumerates
// the join of E with nested loops over the relations' tuples. It records
// how often each set was asked for and refuses disconnected or empty sets,
// which the engine does not promise to handle.
type Counter struct {
	In    *Instance
	Calls map[hypergraph.Set]int
}

// MaxBoundaryCount returns T_E: the largest group of the join of the
// relations in e grouped by h.Boundary(e).
func (c *Counter) MaxBoundaryCount(ctx context.Context, h *hypergraph.Hypergraph, e hypergraph.Set) (int64, error) {
	if c.Calls == nil {
		c.Calls = map[hypergraph.Set]int{}
	}
	c.Calls[e]++
	if !h.Connected(e) {
		return 0, fmt.Errorf("brute: set %v is empty or disconnected", h.Names(e))
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	members := e.Members()
	bound := h.Boundary(e)
	binding := map[string]int{}
	groups := map[string]int64{}
	var rec func(x int)
	rec = func(x int) {
		if x == len(members) {
			key := make([]int, len(bound))
			for j, a := range bound {
				key[j] = binding[a]
			}
			groups[tupleKey(key)]++
			return
		}
		r := c.In.Rels[members[x]]
		for _, t := range r.Tuples {
			if added, ok := bind(binding, r.Attrs, t); ok {
				rec(x + 1)
				unbind(binding, added)
			}
		}
	}
	rec(0)
	var best int64
	for _, n := range groups {
		best = max(best, n)
	}
	return best, nil
}

// tupleKey is an injective text form of a tuple, for map keys: the
// concatenation of its values' varints (a prefix-free code).
func tupleKey(t []int) string {
	var buf [64]byte
	b := buf[:0]
	for _, v := range t {
		b = binary.AppendVarint(b, int64(v))
	}
	return string(b)
}

// multiplicities maps each distinct tuple of r (as [tupleKey]) to its count.
func multiplicities(r Relation) map[string]int64 {
	m := map[string]int64{}
	for _, t := range r.Tuples {
		m[tupleKey(t)]++
	}
	return m
}

// DirectTE evaluates Eq. (1) for the relations whose indices are in e
// (e may be empty or disconnected): it computes ∂E from the attribute lists,
// enumerates every assignment of domain values to the attributes of E, and
// takes the largest sum of products of multiplicities over assignments
// with the same boundary values. It shares no code with [Counter] or with
// the hypergraph package.
func DirectTE(in *Instance, e []int) int64 {
	inE := map[int]bool{}
	for _, i := range e {
		inE[i] = true
	}
	var attrs []string
	seen := map[string]bool{}
	for _, i := range e {
		for _, a := range in.Rels[i].Attrs {
			if !seen[a] {
				seen[a] = true
				attrs = append(attrs, a)
			}
		}
	}
	outside := map[string]bool{}
	for i, r := range in.Rels {
		if !inE[i] {
			for _, a := range r.Attrs {
				outside[a] = true
			}
		}
	}
	var boundary []int // positions in attrs
	for p, a := range attrs {
		if outside[a] {
			boundary = append(boundary, p)
		}
	}
	mult := make([]map[string]int64, len(in.Rels))
	for _, i := range e {
		mult[i] = multiplicities(in.Rels[i])
	}
	pos := map[string]int{}
	for p, a := range attrs {
		pos[a] = p
	}
	groups := map[string]int64{}
	val := make([]int, len(attrs))
	var t []int
	key := make([]int, len(boundary))
	for {
		prod := int64(1)
		for _, i := range e {
			r := in.Rels[i]
			t = t[:0]
			for _, a := range r.Attrs {
				t = append(t, val[pos[a]])
			}
			prod *= mult[i][tupleKey(t)]
			if prod == 0 {
				break
			}
		}
		for j, p := range boundary {
			key[j] = val[p]
		}
		groups[tupleKey(key)] += prod
		// Next assignment (odometer).
		p := 0
		for p < len(val) {
			val[p]++
			if val[p] < in.Dom {
				break
			}
			val[p] = 0
			p++
		}
		if p == len(val) {
			break
		}
	}
	var best int64
	for _, n := range groups {
		best = max(best, n)
	}
	return best
}

// Count is the join size count(I), by [DirectTE] on all relations.
func Count(in *Instance) int64 {
	all := make([]int, len(in.Rels))
	for i := range all {
		all[i] = i
	}
	return DirectTE(in, all)
}

// LocalSensitivity is the true local sensitivity of the join count:
// max |count(I′) − count(I)| over every I′ obtained by inserting any tuple
// over the domain into a private relation or deleting one copy of an
// existing tuple of a private relation.
func LocalSensitivity(in *Instance) int64 {
	base := Count(in)
	var best int64
	for i, r := range in.Rels {
		if r.Public {
			continue
		}
		t := make([]int, len(r.Attrs))
		for {
			next := in.Clone()
			next.Rels[i].Tuples = append(next.Rels[i].Tuples, slices.Clone(t))
			best = max(best, abs(Count(next)-base))
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
			best = max(best, abs(Count(next)-base))
		}
	}
	return best
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Shape is a join query: relation names and their attributes.
type Shape struct {
	Name  string
	Rels  []string   // relation names
	Attrs [][]string // attributes per relation
}

// Shapes are the joins the tests draw from: two-table, paths, stars, the
// triangle, a 4-cycle, a relation with unary neighbours, two relations
// sharing two attributes and a bowtie with private attributes.
var Shapes = []Shape{
	{"pair", []string{"R", "S"}, [][]string{{"A", "B"}, {"B", "C"}}},
	{"path3", []string{"R", "S", "T"}, [][]string{{"A", "B"}, {"B", "C"}, {"C", "D"}}},
	{"path4", []string{"R", "S", "T", "U"}, [][]string{{"A", "B"}, {"B", "C"}, {"C", "D"}, {"D", "E"}}},
	{"star3", []string{"R", "S", "T"}, [][]string{{"A", "B"}, {"A", "C"}, {"A", "D"}}},
	{"star4", []string{"R", "S", "T", "U"}, [][]string{{"A"}, {"A", "B"}, {"A", "C"}, {"A", "D"}}},
	{"triangle", []string{"R", "S", "T"}, [][]string{{"A", "B"}, {"B", "C"}, {"C", "A"}}},
	{"cycle4", []string{"R", "S", "T", "U"}, [][]string{{"A", "B"}, {"B", "C"}, {"C", "D"}, {"D", "A"}}},
	{"hub", []string{"R", "S", "T", "U"}, [][]string{{"A", "B", "C"}, {"A"}, {"B"}, {"C"}}},
	{"double", []string{"R", "S"}, [][]string{{"A", "B"}, {"A", "B"}}},
	{"triangle+tail", []string{"R", "S", "T", "U"}, [][]string{{"A", "B"}, {"B", "C"}, {"C", "A"}, {"A", "D"}}},
}

// Random draws an instance of the shape: domain {0,1} or {0,1,2}, 0 to
// maxTuples tuples per relation, some duplicated, and each relation public
// with probability pPublic (at least one stays private).
func Random(rng *rand.Rand, s Shape, maxTuples int, pPublic float64) *Instance {
	in := &Instance{Dom: 2 + rng.IntN(2)}
	for i, name := range s.Rels {
		r := Relation{Name: name, Attrs: slices.Clone(s.Attrs[i]), Public: rng.Float64() < pPublic}
		n := rng.IntN(maxTuples + 1)
		for range n {
			if len(r.Tuples) > 0 && rng.IntN(4) == 0 {
				r.Tuples = append(r.Tuples, slices.Clone(r.Tuples[rng.IntN(len(r.Tuples))]))
				continue
			}
			t := make([]int, len(r.Attrs))
			for j := range t {
				t[j] = rng.IntN(in.Dom)
			}
			r.Tuples = append(r.Tuples, t)
		}
		in.Rels = append(in.Rels, r)
	}
	allPublic := true
	for _, r := range in.Rels {
		allPublic = allPublic && r.Public
	}
	if allPublic {
		in.Rels[rng.IntN(len(in.Rels))].Public = false
	}
	return in
}

// ErrNoNeighbour is returned by [Neighbour] when no private relation exists.
var ErrNoNeighbour = errors.New("brute: no private relation")

// Neighbour returns a random neighbour of in: one tuple over the domain
// added to, or one existing tuple removed from, a private relation.
func Neighbour(rng *rand.Rand, in *Instance) (*Instance, error) {
	var priv []int
	for i, r := range in.Rels {
		if !r.Public {
			priv = append(priv, i)
		}
	}
	if len(priv) == 0 {
		return nil, ErrNoNeighbour
	}
	out := in.Clone()
	i := priv[rng.IntN(len(priv))]
	r := &out.Rels[i]
	if len(r.Tuples) > 0 && rng.IntN(2) == 0 {
		j := rng.IntN(len(r.Tuples))
		r.Tuples = slices.Delete(r.Tuples, j, j+1)
		return out, nil
	}
	t := make([]int, len(r.Attrs))
	for j := range t {
		t[j] = rng.IntN(out.Dom)
	}
	r.Tuples = append(r.Tuples, t)
	return out, nil
}

// Hypergraph returns the hypergraph of the shape (every
// relation private).
func (s Shape) Hypergraph() (*hypergraph.Hypergraph, error) {
	in := &Instance{Dom: 2}
	for i, name := range s.Rels {
		in.Rels = append(in.Rels, Relation{Name: name, Attrs: slices.Clone(s.Attrs[i])})
	}
	return in.Hypergraph()
}

// bind extends binding with tuple t of attributes attrs. It reports false,
// leaving binding unchanged, when t disagrees with a bound attribute;
// otherwise it returns the attributes it newly bound (for [unbind]).
func bind(binding map[string]int, attrs []string, t []int) ([]string, bool) {
	var added []string
	for j, a := range attrs {
		if v, ok := binding[a]; ok {
			if v != t[j] {
				unbind(binding, added)
				return nil, false
			}
		} else {
			binding[a] = t[j]
			added = append(added, a)
		}
	}
	return added, true
}

// unbind removes the attributes added from binding.
func unbind(binding map[string]int, added []string) {
	for _, a := range added {
		delete(binding, a)
	}
}
