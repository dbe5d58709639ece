package uniformize

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
)

// ErrNotHierarchical is wrapped by the error [NewTree] returns for a join
// that is not hierarchical.
var ErrNotHierarchical = errors.New("not hierarchical")

// Node is one node of the attribute tree of a hierarchical join (Ghazi et
// al. §4.2): the join attributes that share one atom.
//
// Attributes with equal atoms are one node. Alg. 7 takes the ancestors of x
// to be {y : atom(x) ⊊ atom(y)}, strict containment, so two attributes
// with the same atom are never each other's ancestor; they always sit in
// the same relations, and Decompose on either one would split the same
// relations by the same ancestors. Merging them is the paper's tree with
// such chains contracted.
type Node struct {
	// Attrs are the attributes whose atom is Atom, sorted.
	Attrs []string
	// Atom is atom(x): the relations that contain the attributes.
	Atom hypergraph.Set
	// Parent is the node whose atom is the smallest strictly larger atom,
	// or -1 for a root.
	Parent int
	// Children are the nodes whose parent this is, in node order.
	Children []int
}

// Tree is the attribute tree (a forest when the join's atoms have no
// common superset) of a hierarchical join.
//
// Every relation corresponds to a root-to-node path: the nodes whose atom
// contains it. Those atoms all share the relation, so by hierarchy they
// are nested, i.e. a chain ordered by the tree.
type Tree struct {
	h     *hypergraph.Hypergraph
	nodes []Node
	roots []int
	order []int // bottom-up: every node after all its descendants
}

// CheckHierarchical returns nil when the join is hierarchical: for any two
// join attributes x, y, atom(x) and atom(y) are disjoint or one contains
// the other. Otherwise it returns an error wrapping [ErrNotHierarchical]
// that names the first offending pair, the relations they share and a
// relation that has one attribute but not the other, e.g.
//
//	not hierarchical: atom(B) = {R1, R2} and atom(C) = {R2, R3} overlap in
//	R2 without containment (R1 has B but not C, R3 has C but not B)
func CheckHierarchical(h *hypergraph.Hypergraph) error {
	attrs := h.Attributes()
	for a := 0; a < len(attrs); a++ {
		for b := a + 1; b < len(attrs); b++ {
			x, y := h.Atom(attrs[a]), h.Atom(attrs[b])
			if x&y == 0 || x&^y == 0 || y&^x == 0 {
				continue
			}
			onlyX, onlyY := h.Names(x &^ y)[0], h.Names(y &^ x)[0]
			return fmt.Errorf("%w: atom(%s) = %s and atom(%s) = %s overlap in %s without containment (%s has %s but not %s, %s has %s but not %s)",
				ErrNotHierarchical, attrs[a], braces(h.Names(x)), attrs[b], braces(h.Names(y)),
				strings.Join(h.Names(x&y), ", "), onlyX, attrs[a], attrs[b], onlyY, attrs[b], attrs[a])
		}
	}
	return nil
}

func braces(names []string) string { return "{" + strings.Join(names, ", ") + "}" }

// NewTree builds the attribute tree of h, or returns the error of
// [CheckHierarchical]. Nodes are numbered by their atom size, largest
// first, ties by first attribute name, so roots come first and the
// numbering depends only on the join query.
func NewTree(h *hypergraph.Hypergraph) (*Tree, error) {
	if err := CheckHierarchical(h); err != nil {
		return nil, err
	}
	byAtom := map[hypergraph.Set][]string{}
	var atoms []hypergraph.Set
	for _, a := range h.Attributes() { // sorted
		s := h.Atom(a)
		if _, ok := byAtom[s]; !ok {
			atoms = append(atoms, s)
		}
		byAtom[s] = append(byAtom[s], a)
	}
	slices.SortStableFunc(atoms, func(p, q hypergraph.Set) int { return q.Len() - p.Len() })
	t := &Tree{h: h}
	for i, s := range atoms {
		n := Node{Attrs: byAtom[s], Atom: s, Parent: -1}
		// The parent has the smallest strictly larger atom; larger atoms
		// come earlier, and the ones containing s form a chain.
		for j := i - 1; j >= 0; j-- {
			if s&^atoms[j] == 0 && atoms[j] != s {
				if n.Parent < 0 || atoms[j].Len() < t.nodes[n.Parent].Atom.Len() {
					n.Parent = j
				}
			}
		}
		t.nodes = append(t.nodes, n)
		if n.Parent < 0 {
			t.roots = append(t.roots, i)
		} else {
			t.nodes[n.Parent].Children = append(t.nodes[n.Parent].Children, i)
		}
	}
	var post func(int)
	post = func(v int) {
		for _, c := range t.nodes[v].Children {
			post(c)
		}
		t.order = append(t.order, v)
	}
	for _, r := range t.roots {
		post(r)
	}
	return t, nil
}

// Hypergraph returns the join the tree was built from.
func (t *Tree) Hypergraph() *hypergraph.Hypergraph { return t.h }

// Len is the number of nodes.
func (t *Tree) Len() int { return len(t.nodes) }

// Node returns node v. Its slices are shared and must not be modified.
func (t *Tree) Node(v int) Node { return t.nodes[v] }

// Roots returns the roots in node order.
func (t *Tree) Roots() []int { return slices.Clone(t.roots) }

// BottomUp returns every node after all its descendants (a post-order),
// the order in which Alg. 6 visits them.
func (t *Tree) BottomUp() []int { return slices.Clone(t.order) }

// NodeOf returns the node holding attribute a, or -1.
func (t *Tree) NodeOf(a string) int {
	for v, n := range t.nodes {
		if slices.Contains(n.Attrs, a) {
			return v
		}
	}
	return -1
}

// Ancestors returns y of Alg. 7 for node v: the attributes of its strict
// ancestors, root first, each node's attributes sorted. It is empty for a
// root.
func (t *Tree) Ancestors(v int) []string {
	var chain []int
	for p := t.nodes[v].Parent; p >= 0; p = t.nodes[p].Parent {
		chain = append(chain, p)
	}
	var out []string
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, t.nodes[chain[i]].Attrs...)
	}
	return out
}

// PathAttrs returns the ancestors of v followed by v's own attributes:
// ∧_E for E = atom(v), the attributes every relation of atom(v) has.
func (t *Tree) PathAttrs(v int) []string {
	return append(t.Ancestors(v), t.nodes[v].Attrs...)
}

// Descendants returns the strict descendants of v in node order.
func (t *Tree) Descendants(v int) []int {
	var out []int
	var rec func(int)
	rec = func(u int) {
		for _, c := range t.nodes[u].Children {
			out = append(out, c)
			rec(c)
		}
	}
	rec(v)
	slices.Sort(out)
	return out
}

// Decomposed reports whether Alg. 6 splits at node v: every node but a
// root. At a root y = ∅, dom(∅) = {()} holds a single value, so Decompose
// yields one bucket and splits nothing; we skip it rather than spend a
// noisy count on it, and σ(atom(root), ∅) stays ⊥.
func (t *Tree) Decomposed(v int) bool { return t.nodes[v].Parent >= 0 }

// Path returns the nodes whose atom contains relation i, root first: the
// relation's root-to-node path.
func (t *Tree) Path(i int) []int {
	var out []int
	for v, n := range t.nodes {
		if n.Atom.Has(i) {
			out = append(out, v)
		}
	}
	// Nested atoms: larger first is root first, and node numbers already
	// follow atom size.
	return out
}

// String renders the tree for `synth inspect`, one node a line with the
// relations of its atom:
//
//	A  [R1, R2, R3]
//	├── B  [R1, R2]
//	│   └── C  [R2]
//	└── D  [R3]
func (t *Tree) String() string {
	var b strings.Builder
	var rec func(v int, prefix, branch string)
	rec = func(v int, prefix, branch string) {
		n := t.nodes[v]
		fmt.Fprintf(&b, "%s%s%s  [%s]\n", prefix, branch, strings.Join(n.Attrs, ", "), strings.Join(t.h.Names(n.Atom), ", "))
		next := prefix
		switch branch {
		case "├── ":
			next += "│   "
		case "└── ":
			next += "    "
		}
		for k, c := range n.Children {
			if k == len(n.Children)-1 {
				rec(c, next, "└── ")
			} else {
				rec(c, next, "├── ")
			}
		}
	}
	for _, r := range t.roots {
		rec(r, "", "")
	}
	return b.String()
}
