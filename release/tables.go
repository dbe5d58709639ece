package release

// The tables release (release.output: tables): a privacy-unit release
// that writes the private tables of the unit's ownership tree with
// synthetic keys, and their join.
//
// Model. The ownership tree is the unit U and every private table that
// reaches it through foreign keys child.fk = parent.primary_key. Every
// table T of the tree gets one synthetic distribution, its level, over
//
//	context(T) = the released columns of T's ancestors, and the fan-out of
//	             T's parent into T (how many T rows the parent has);
//	own(T)     = T's released columns (with those of the public lookups
//	             folded into it), and T's fan-out into each of its child
//	             tables.
//
// A level is a privacy-unit release of the path join U ⋈ … ⋈ T over
// context(T) ∪ own(T): each row of it is one row of T, every unit's rows
// weigh at most r together (per-unit contribution bounding, package
// privacyunit), and the factored PMW fits its 1-way marginals and the
// selected 2-way marginals of (own, context) and (own, own) pairs. The
// synthetic database is then drawn top down: N̂ units from U's level; for
// every synthetic parent, as many children as its drawn fan-out, each
// child's own columns drawn from its level conditioned on its context.
//
// Why this removes the flat release's bias: the flat release bounds each
// unit to r join rows in all, so a unit with 1,000 rows weighs what a unit
// with one row weighs, and the released join is a per-unit average. Here
// the number of rows each parent has is itself a released column, measured
// at the parent's level (at the unit level every unit is exactly one row,
// so nothing is bounded away), and the children's columns are measured
// given that fan-out: units of similar size share a context, so the
// per-unit average inside a context is close to the per-row truth, and the
// fan-out rebuilds the row counts. Sibling correlation (two orders of one
// customer alike) is carried by what the siblings share: their parent's
// columns and fan-out, and with release.sibling_classes the parent's
// sibling class of the edge (the most frequent bin of one child column
// among its children: an own column of the parent's level, a context
// column of the child's).
//
// Privacy. Neighbours delete one unit with its whole subtree.
//   - Fan-out clip of an edge A→C (exponential mechanism over the public
//     ladder fanoutLows): score −#{units owning an A row with more than τ_j
//     C rows} − 2j/ε_e. Deleting a unit changes that count by at most one
//     and no other unit's rows: sensitivity 1. The clip is a DP output;
//     the levels' domains depend on it (adaptive composition).
//   - A level is privacyunit's release on its path join, DP under the same
//     neighbour relation with its (ε_k, δ_k): deleting a unit removes its
//     rows of T, whose bounded weights add up to at most r (one row at the
//     unit level, where every unit is one row). The fan-out, class and
//     sibling-class columns of a row are functions of the rows below it,
//     which all belong to the row's own unit (a child references one
//     parent, and the parent's unit owns the child's subtree), so deleting
//     a unit changes them only on the deleted unit's own rows, which leave
//     with it: no other unit's row changes, and the level's bound holds.
//     Their domains are public (the clip ladder, the child column's
//     declared bins).
//   - The clips and the levels compose in zCDP (Bun–Steinke 2016, Lemma
//     2.3): Σ ρ_e + Σ ρ_k = ρ, converted to the spec's (ε, δ). Drawing
//     the tables, their keys (public tables' real keys included: chosen
//     from the public rows by the drawn values) and their join from the
//     levels' models is post-processing.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/privacyunit"
	"github.com/synth-dp/synth/spec"
)

// fanoutLows are the low ends of the public fan-out bins: one bin per
// count up to 7, then two bins an octave, up to 2¹² (the last bin, clipped, up to 6,143) children per parent.
var fanoutLows = func() []int64 {
	out := []int64{0, 1, 2, 3, 4, 5, 6, 7}
	for b := int64(8); b <= 1<<12; b *= 2 {
		out = append(out, b, b+b/2)
	}
	return out
}()

// fanoutClip is the clip τ_j of candidate j ≥ 1 of the ladder: the largest
// count of bin j (the domain keeps bins 0…j, and bin j takes every count
// at or above its low end, clipped to τ_j).
func fanoutClip(j int) int64 { return fanoutLows[j+1] - 1 }

// fanoutClipCandidates is the number of clip candidates j = 1 … n.
var fanoutClipCandidates = len(fanoutLows) - 2

// tablesClipShare is the share of ρ that chooses the fan-out clips (split
// evenly over the tree's edges); the rest goes to the levels, evenly.
const tablesClipShare = 0.05

// maxLevelCells bounds a level's dense joint (its context × own cells):
// public, checked before any data is read.
const maxLevelCells = 1 << 24

// treeTable is one private table of the ownership tree.
type treeTable struct {
	name     string
	parent   int    // index of the parent table, −1 for the unit
	fk       string // this table's column referencing the parent's key
	pk       []string
	children []int
	released []spec.ColumnRef // original refs of the released columns it owns
	depth    int
	// sibling is the column of this table whose most frequent value among
	// a parent's children is the parent's sibling class ([siblingName]);
	// Column "" for none.
	sibling spec.ColumnRef
}

// ownTree is a spec's ownership tree, the unit first, parents before
// children.
type ownTree struct {
	tables []treeTable
	index  map[string]int
}

// fanName is the declared name of the fan-out column of parent into child
// (reserved prefix: no declared column may take it).
func fanName(child string) string { return engine.ReservedPrefix + "fanout_" + child }

// siblingName is the declared name of the parent's sibling class of the
// edge into child: the most frequent value of child's sibling column
// among the parent's children.
func siblingName(child string) string { return engine.ReservedPrefix + "sibling_" + child }

// maxSiblingValues bounds the domain of a sibling column (public).
const maxSiblingValues = 16

// siblingColumn picks table tb's sibling column: its first released
// column of at most maxSiblingValues bins (its own, not a folded
// lookup's: the engine computes the class on tb's stored bins).
func siblingColumn(s *spec.Spec, tb *treeTable) spec.ColumnRef {
	for _, r := range tb.released {
		if c := s.Column(r); r.Table == tb.name && c != nil && c.Size() <= maxSiblingValues {
			return r
		}
	}
	return spec.ColumnRef{}
}

// className is the declared name of the coarse fan-out class of parent
// into child: octave classes 0, 1, 2–3, 4–7, …, the context of the
// levels below the child (units of one size class weigh alike).
func className(child string) string { return engine.ReservedPrefix + "fanclass_" + child }

// classLows are the low ends of the octave classes of an edge whose fine
// clip is candidate j: 0, 1, 2, 4, … up to the low end of bin j (all of
// them low ends of fine bins, so a fine bin lies in one class), the last
// from at most maxClassLow on.
func classLows(j int) []int64 {
	out := []int64{0}
	for b := int64(1); b <= min(fanoutLows[j], maxClassLow); b *= 2 {
		out = append(out, b)
	}
	return out
}

// maxClassLow is the low end of the last class: 256 children or more.
const maxClassLow = 256

// classOf returns the class of fine bin b among lows.
func classOf(lows []int64, b int) int32 {
	k := sort.Search(len(lows), func(i int) bool { return lows[i] > fanoutLows[b] }) - 1
	return int32(max(k, 0))
}

// buildTree reads the ownership tree of s: the unit, and every private
// table whose foreign key child.fk = parent.primary_key leads to a table
// of the tree. Released columns go to the private table that owns them (a
// public table's to the private table it is folded into).
func buildTree(s *spec.Spec, owner func(table string) (string, bool)) (*ownTree, error) {
	u := s.Table(s.Privacy.Unit)
	if u == nil || u.Public {
		return nil, fmt.Errorf("%w: release.output tables: privacy.unit %q is not a private table", ErrUnsupported, s.Privacy.Unit)
	}
	t := &ownTree{index: map[string]int{}}
	t.tables = append(t.tables, treeTable{name: u.Name, parent: -1, pk: slices.Clone(u.PrimaryKey)})
	t.index[u.Name] = 0
	for grew := true; grew; {
		grew = false
		for _, eq := range s.Join {
			for _, e := range [][2]spec.ColumnRef{{eq.Left, eq.Right}, {eq.Right, eq.Left}} {
				child, par := e[0], e[1]
				pi, ok := t.index[par.Table]
				if !ok {
					continue
				}
				if _, seen := t.index[child.Table]; seen {
					continue
				}
				ct, pt := s.Table(child.Table), s.Table(par.Table)
				if ct == nil || ct.Public || len(pt.PrimaryKey) != 1 || pt.PrimaryKey[0] != par.Column {
					continue
				}
				t.index[child.Table] = len(t.tables)
				t.tables = append(t.tables, treeTable{name: child.Table, parent: pi, fk: child.Column, pk: slices.Clone(ct.PrimaryKey), depth: t.tables[pi].depth + 1})
				t.tables[pi].children = append(t.tables[pi].children, len(t.tables)-1)
				grew = true
			}
		}
	}
	for _, tb := range s.Tables {
		if _, ok := t.index[tb.Name]; !ok && !tb.Public {
			return nil, fmt.Errorf("%w: release.output tables: private table %s is not on the ownership tree of %s (a foreign key child.column = parent.primary_key must lead to it)",
				ErrUnsupported, tb.Name, u.Name)
		}
	}
	for _, r := range s.Release.Columns {
		o := r.Table
		if tb := s.Table(r.Table); tb != nil && tb.Public {
			var ok bool
			if o, ok = owner(r.Table); !ok {
				return nil, fmt.Errorf("%w: release.output tables: released column %s is in public table %s, which is folded into no private table", ErrUnsupported, r, r.Table)
			}
		}
		i, ok := t.index[o]
		if !ok {
			return nil, fmt.Errorf("%w: release.output tables: released column %s belongs to no table of the tree", ErrUnsupported, r)
		}
		t.tables[i].released = append(t.tables[i].released, r)
	}
	for i := 1; i < len(t.tables) && s.Release.SiblingClasses; i++ {
		t.tables[i].sibling = siblingColumn(s, &t.tables[i])
	}
	if len(t.tables) < 2 {
		return nil, fmt.Errorf("%w: release.output tables needs at least two private tables on the unit's ownership tree (this spec has one: use release.output join)", ErrUnsupported)
	}
	return t, nil
}

// path returns the tables from the unit down to i.
func (t *ownTree) path(i int) []int {
	var p []int
	for ; i >= 0; i = t.tables[i].parent {
		p = append(p, i)
	}
	slices.Reverse(p)
	return p
}

// hops returns the engine's foreign-key hops from the unit down to i.
func (t *ownTree) hops(s *spec.Spec, i int) []engine.Hop {
	var out []engine.Hop
	p := t.path(i)
	for k := 1; k < len(p); k++ {
		par, ch := t.tables[p[k-1]], t.tables[p[k]]
		out = append(out, engine.Hop{Parent: par.name, PK: s.Table(par.name).PrimaryKey[0], Child: ch.name, FK: ch.fk})
	}
	return out
}

// levelCol is one column of a level: a released column (ref) or a
// fan-out (fanChild, the child table's index).
type levelCol struct {
	key      string
	ref      spec.ColumnRef
	fanChild int  // −1 for a released column
	class    bool // the coarse class of fanChild's fan-out, not the fine one
	sibling  bool // fanChild's sibling class, not its fan-out
	size     int
}

// level is the layout of table i's level: context columns, then own.
type level struct {
	table int
	cols  []levelCol
	nCtx  int
}

func releasedKey(r spec.ColumnRef) string { return "col:" + r.String() }
func fanKey(child string) string          { return "fan:" + child }
func classKey(child string) string        { return "class:" + child }
func siblingKey(child string) string      { return "sibling:" + child }

// levelLayout lays out table i's level given the fan-out bins of every
// edge (bins[child] = number of bins of the edge into child; classes
// likewise for the coarse classes).
func (t *ownTree) levelLayout(s *spec.Spec, i int, bins, classes map[int]int) *level {
	lv := &level{table: i}
	p := t.path(i)
	for _, a := range p[:len(p)-1] {
		for _, r := range t.tables[a].released {
			lv.cols = append(lv.cols, levelCol{key: releasedKey(r), ref: r, fanChild: -1, size: s.Column(r).Size()})
		}
	}
	for _, a := range p[1:] {
		lv.cols = append(lv.cols, levelCol{key: classKey(t.tables[a].name), fanChild: a, class: true, size: classes[a]})
	}
	if sc := t.tables[i].sibling; sc.Column != "" {
		lv.cols = append(lv.cols, levelCol{key: siblingKey(t.tables[i].name), fanChild: i, sibling: true, size: s.Column(sc).Size()})
	}
	lv.nCtx = len(lv.cols)
	for _, r := range t.tables[i].released {
		lv.cols = append(lv.cols, levelCol{key: releasedKey(r), ref: r, fanChild: -1, size: s.Column(r).Size()})
	}
	for _, c := range t.tables[i].children {
		lv.cols = append(lv.cols, levelCol{key: fanKey(t.tables[c].name), fanChild: c, size: bins[c]})
	}
	for _, c := range t.tables[i].children {
		if sc := t.tables[c].sibling; sc.Column != "" {
			lv.cols = append(lv.cols, levelCol{key: siblingKey(t.tables[c].name), fanChild: c, sibling: true, size: s.Column(sc).Size()})
		}
	}
	return lv
}

// ownColumns are the positions of the level's own columns (for the
// factored model; nil on the dense one, which measures every column).
func (lv *level) ownColumns(factored bool) []int {
	if !factored {
		return nil
	}
	var out []int
	for k := lv.nCtx; k < len(lv.cols); k++ {
		out = append(out, k)
	}
	return out
}

// contextInit are the positions of the columns whose 1-way marginals the
// level's initial step measures at the lower share contextShare
// (pmw.Config.InitLow): the context's fan-out classes and sibling class,
// and the level's own sibling classes. A class is far from uniform (most
// TPC-H orders belong to customers of two or three classes), so without
// its 1-way the first rounds select (class, own) pairs for the class's
// own shape, and their noise lands on the own column: the TPC-H orders
// table's priority marginal was 0.03–0.06 TVD at ε = 1 (uniform: 0.007),
// 0.007 with it. The released context columns are left out: they are
// their ancestors' levels' business, and measuring a 38-value country
// again at every level cost Retail more than it gained. An own sibling
// class at the full share cost the TPC-H join 0.026 → 0.039 TVD at ε = 1.
func (lv *level) contextInit(factored bool) []int {
	if !factored {
		return nil
	}
	var out []int
	for k, c := range lv.cols {
		if c.class || c.sibling {
			out = append(out, k)
		}
	}
	return out
}

// cells returns the level's context cells and own cells.
func (lv *level) cells() (ctx, own int64) {
	ctx, own = 1, 1
	for k, c := range lv.cols {
		if k < lv.nCtx {
			ctx *= int64(c.size)
		} else {
			own *= int64(c.size)
		}
	}
	return ctx, own
}

// levelSpec is the spec of table i's level: the path's tables and the
// public tables folded into them, the path's join edges, the fan-out
// columns declared on their parents (bins[child] bins over fanoutLows,
// the last clipped), the level's columns released, and a workload of the
// spec's marginals inside the level with every (own, any) pair.
func (t *ownTree) levelSpec(s *spec.Spec, lv *level, owner func(string) (string, bool), bins map[int]int, clips map[int]int) *spec.Spec {
	onPath := map[string]bool{}
	for _, k := range t.path(lv.table) {
		onPath[t.tables[k].name] = true
	}
	keep := func(tb *spec.Table) bool {
		if !tb.Public {
			return onPath[tb.Name]
		}
		o, ok := owner(tb.Name)
		return ok && onPath[o]
	}
	ls := *s
	ls.Tables = nil
	for _, tb := range s.Tables {
		if !keep(&tb) {
			continue
		}
		tb.Columns = slices.Clone(tb.Columns)
		if k, ok := t.index[tb.Name]; ok {
			for _, c := range t.tables[k].children {
				if n, ok := bins[c]; ok && (onPath[t.tables[c].name] || k == lv.table) {
					edges := make([]float64, n+1)
					for b := 0; b < n; b++ {
						edges[b] = float64(fanoutLows[b])
					}
					edges[n] = float64(fanoutClip(n-1) + 1)
					tb.Columns = append(tb.Columns, spec.Column{Name: fanName(t.tables[c].name), Type: spec.Integer, Min: 0, Max: edges[n] - 1, BinEdges: edges, OutOfDomain: spec.OutOfDomainClamp})
					if onPath[t.tables[c].name] {
						cl := classLows(clips[c])
						ce := make([]float64, len(cl)+1)
						for b, v := range cl {
							ce[b] = float64(v)
						}
						ce[len(cl)] = edges[n]
						tb.Columns = append(tb.Columns, spec.Column{Name: className(t.tables[c].name), Type: spec.Integer, Min: 0, Max: edges[n] - 1, BinEdges: ce, OutOfDomain: spec.OutOfDomainClamp})
					}
					if sc := t.tables[c].sibling; sc.Column != "" && (onPath[t.tables[c].name] && c == lv.table || k == lv.table) {
						sib := *s.Column(sc)
						sib.Name = siblingName(t.tables[c].name)
						tb.Columns = append(tb.Columns, sib)
					}
				}
			}
		}
		ls.Tables = append(ls.Tables, tb)
	}
	ls.Join = nil
	for _, eq := range s.Join {
		l, r := s.Table(eq.Left.Table), s.Table(eq.Right.Table)
		if keep(l) && keep(r) {
			ls.Join = append(ls.Join, eq)
		}
	}
	ref := func(c levelCol) spec.ColumnRef {
		if c.fanChild < 0 {
			return c.ref
		}
		name := fanName(t.tables[c.fanChild].name)
		if c.class {
			name = className(t.tables[c.fanChild].name)
		}
		if c.sibling {
			name = siblingName(t.tables[c.fanChild].name)
		}
		return spec.ColumnRef{Table: t.tables[t.tables[c.fanChild].parent].name, Column: name}
	}
	ls.Release = s.Release
	ls.Release.Columns = nil
	ls.Release.Measures = nil
	ls.Release.Rows = 0
	if lv.table == 0 {
		// The unit level's path join is the unit table (with its folded
		// lookups, one row each): every unit is exactly one row, so a
		// bound of one row clips nothing and is the level's sensitivity;
		// r > 1 would only scale its noise by r.
		ls.Release.ContributionBound = 1
	}
	ls.Release.Output = spec.OutputJoin
	in := map[spec.ColumnRef]bool{}
	for _, c := range lv.cols {
		r := ref(c)
		ls.Release.Columns = append(ls.Release.Columns, r)
		in[r] = true
	}
	ls.Workload = spec.Workload{}
	seen := map[string]bool{}
	add := func(m []spec.ColumnRef) {
		k := fmt.Sprint(m)
		if !seen[k] {
			seen[k] = true
			ls.Workload.Marginals = append(ls.Workload.Marginals, m)
		}
	}
	// The spec's marginals inside the level that hold one of its own
	// columns (a marginal of ancestors' columns only is its ancestors'
	// levels' business: measuring it here would spend budget on what the
	// conditional draw never reads).
	own := map[spec.ColumnRef]bool{}
	for _, c := range lv.cols[lv.nCtx:] {
		own[ref(c)] = true
	}
	for _, m := range s.Workload.Marginals {
		ok, mine := true, false
		for _, r := range m {
			ok = ok && in[r]
			mine = mine || own[r]
		}
		if ok && mine {
			add(m)
		}
	}
	for a := lv.nCtx; a < len(lv.cols); a++ {
		for b := range lv.cols {
			if b != a && (b < lv.nCtx || b > a) {
				add([]spec.ColumnRef{ref(lv.cols[b]), ref(lv.cols[a])})
			}
		}
	}
	if len(ls.Workload.Marginals) == 0 {
		add([]spec.ColumnRef{ref(lv.cols[0])})
	}
	return &ls
}

// tablesMethod is the tables release: privacy-unit levels down the
// ownership tree (see the file comment).
type tablesMethod struct{ unitMethod }

func (tablesMethod) Check(p *Plan) error {
	if err := (unitMethod{}).Check(p); err != nil {
		return err
	}
	// The levels compose in zCDP.
	s := p.Spec
	if len(s.Release.Measures) > 0 {
		return fmt.Errorf("%w: release.measures with release.output tables: the measures are carried by the join file only (drop release.output tables)", ErrUnsupported)
	}
	if !(s.Privacy.Delta > 0) {
		return fmt.Errorf("%w: release.output tables needs δ > 0 (its levels compose in zCDP)", ErrUnsupported)
	}
	if s.Release.ContributionBoundAuto {
		return fmt.Errorf("%w: release.contribution_bound auto with release.output tables (give r, e.g. 1)", ErrUnsupported)
	}
	return nil
}

func (tablesMethod) Prepare(p *Plan, l *dp.Ledger, hk Hooks) (Prepared, error) {
	s := p.Spec
	owner := ownerOf(p)
	tree, err := buildTree(s, owner)
	if err != nil {
		return nil, err
	}
	// The worst case of every level's joint, with every fan-out at the
	// full ladder: public, before any data is read.
	full, fullClass := map[int]int{}, map[int]int{}
	for i := 1; i < len(tree.tables); i++ {
		full[i], fullClass[i] = fanoutClipCandidates+1, len(classLows(fanoutClipCandidates))
	}
	tooBig := func(lv *level) bool {
		c, o := lv.cells()
		return c > maxLevelCells/o || c*o > maxLevelCells
	}
	// A sibling class is dropped (public: from the spec alone) where it
	// would take a level above the cap: first the one in the level's
	// context, then its children's; the deepest levels first (they are
	// the largest, and dropping there shrinks their parents' levels too).
	for i := len(tree.tables) - 1; i >= 0; i-- {
		if tooBig(tree.levelLayout(s, i, full, fullClass)) {
			tree.tables[i].sibling = spec.ColumnRef{}
		}
		if tooBig(tree.levelLayout(s, i, full, fullClass)) {
			for _, c := range tree.tables[i].children {
				tree.tables[c].sibling = spec.ColumnRef{}
			}
		}
	}
	for i := range tree.tables {
		lv := tree.levelLayout(s, i, full, fullClass)
		if c, o := lv.cells(); tooBig(lv) {
			return nil, fmt.Errorf("%w: release.output tables: the level of table %s (its columns and its ancestors' released columns) may have %d × %d cells, above %d: release fewer or coarser columns, or release.output join",
				ErrUnsupported, tree.tables[i].name, c, o, maxLevelCells)
		}
	}
	b := p.RowsBudget
	root, err := l.SplitZCDP("tables release (privacy unit "+s.Privacy.Unit+")", b,
		"zCDP composition (Bun–Steinke 2016, Lemma 2.3) of the fan-out clips and one privacy-unit level per table of the ownership tree, "+
			"each DP under the unit neighbour relation (a unit deleted with its whole subtree); the total converts to (ε, δ) by Canonne–Kamath–Steinke",
		map[string]any{"tables": len(tree.tables), "neighbours": privacyunit.Neighbours})
	if err != nil {
		return nil, err
	}
	rho := root.TotalRho()
	edges := len(tree.tables) - 1
	rhoEdge := tablesClipShare * rho / float64(edges)
	// The exponential mechanism at ε_e is ε_e²/8-zCDP (bounded range,
	// Cesar–Rogers 2021), as pmw's selections are charged.
	run := &tablesRun{plan: p, tree: tree, owner: owner, hooks: hk, epsEdge: math.Sqrt(8 * rhoEdge)}
	for i := 1; i < len(tree.tables); i++ {
		tb := tree.tables[i]
		if err := root.ChargeRho("fan-out clip of "+tree.tables[tb.parent].name+" → "+tb.name+" (exponential mechanism over a public ladder)", rhoEdge,
			fmt.Sprintf("score −#{units owning a %s row with more than τ_j %s rows} − 2j/ε_e over the public ladder τ_j (1…7, then two a doubling, up to 6,143); "+
				"deleting a unit changes that count by at most 1: sensitivity 1 (dp.ExponentialGrid, exact) at ε_e = %g, which is ε_e²/8-zCDP (Cesar–Rogers 2021)", tree.tables[tb.parent].name, tb.name, run.epsEdge),
			map[string]any{"candidates": fanoutClipCandidates, "step_penalty": fanoutPenalty / run.epsEdge, "epsilon": run.epsEdge}); err != nil {
			return nil, err
		}
	}
	rhoLevel := (1 - tablesClipShare) * rho / float64(len(tree.tables))
	for _, tb := range tree.tables {
		// The level's mechanisms are zCDP only (no row count, a fixed r):
		// pmw spends RhoForBudget(ε_k, δ) of its (ε_k, δ), ε_k chosen so
		// that it is at most the level's share.
		epsK, err := dp.RhoToEpsilon(rhoLevel*(1-1e-9), b.Delta)
		if err != nil {
			return nil, err
		}
		ll, err := root.SplitRho("level of "+tb.name+" (privacy-unit release of the path join over its context and own columns)", rhoLevel,
			dp.Budget{Epsilon: epsK, Delta: b.Delta},
			"a privacy-unit release (package privacyunit, no row count, r fixed) on the path join from the unit to "+tb.name+": all of it is pmw's zCDP share", nil)
		if err != nil {
			return nil, err
		}
		run.ledgers = append(run.ledgers, ll)
	}
	return run, nil
}

// ownerOf maps a public table to the private table it is folded into.
func ownerOf(p *Plan) func(string) (string, bool) {
	s := p.Spec
	m := map[string]string{}
	for _, g := range p.Folding.Groups() {
		var priv string
		for _, n := range g.Members {
			if tb := s.Table(n); tb != nil && !tb.Public {
				priv = n
			}
		}
		if priv == "" {
			continue
		}
		for _, n := range g.Members {
			m[n] = priv
		}
	}
	return func(t string) (string, bool) { o, ok := m[t]; return o, ok }
}

// contextShare is the zCDP share of a fan-out class's 1-way marginal in a
// level's initial step, relative to an own column's
// (pmw.Config.InitLowShare). Measured (3 seeds, ε 1 / 4, mean join TVD):
// without the classes' 1-ways TPC-H 0.035 / 0.021; with them at 0.25,
// TPC-H 0.027 / 0.021 and Retail 0.114 / 0.069 (0.145 / 0.070 without); at
// 1, TPC-H 0.026 / 0.022 and Retail 0.134 / 0.086; every context column's
// 1-way (not only the classes') at 0.25: TPC-H 0.024 / 0.020 but Retail
// 0.159 / 0.069 (a 38-country context measured again at every level).
const contextShare = 0.25

// tablesMutation plants a bug for the audits (tests only).
var tablesMutation int

const (
	mutTrueFanoutClip = 1 // the clip is the best-scoring candidate, chosen without noise
	mutNoChildBound   = 2 // a child level's rows weigh one row each, however many its unit has: no bound on the children
	mutOneChildNoise  = 3 // a child level's noise calibrated to one child (one row) instead of the unit's bound r
	// mutSiblingUnbounded: every question that holds a sibling class is
	// read without the unit's bound, every row weighing one row, as if a
	// class, one value per parent row, had the sensitivity of one row;
	// but below the unit level a unit owns many parent rows.
	mutSiblingUnbounded = 4
)

// levelStats is what level i's privacy-unit release reads: eng, but for a
// planted bug (tests only). r is the level's contribution bound.
func levelStats(eng privacyunit.Stats, i int, r float64) privacyunit.Stats {
	switch {
	case tablesMutation == mutSiblingUnbounded:
		return mutStats{eng, tablesMutation, int64(r)}
	case i == 0 || (tablesMutation != mutNoChildBound && tablesMutation != mutOneChildNoise):
		return eng
	}
	return mutStats{eng, tablesMutation, int64(r)}
}

// mutStats plants a child level's bug (tests only): mutNoChildBound asks
// for the histogram with an unbounded bound (every row weighs min(grid,
// ⌊2⁴⁰/n_u⌋) = grid, one row); mutOneChildNoise multiplies every weight by
// r, which is the honest histogram measured with noise for one row instead
// of r rows (privacyunit calibrates to grid·r), scaled by r;
// mutSiblingUnbounded asks every question that holds a sibling class
// unbounded.
type mutStats struct {
	privacyunit.Stats
	mut int
	r   int64
}

// unbounded reports whether the planted bug reads cols without the bound.
func (m mutStats) unbounded(cols []spec.ColumnRef) bool {
	if m.mut == mutSiblingUnbounded {
		return slices.ContainsFunc(cols, func(c spec.ColumnRef) bool { return strings.HasPrefix(c.Column, siblingName("")) })
	}
	return m.mut == mutNoChildBound
}

func (m mutStats) UnitHistogram(ctx context.Context, h *hypergraph.Hypergraph, key engine.UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]engine.Cell, []engine.UnitDegree, error) {
	if m.unbounded(cols) {
		bound = 1 << 40
	}
	cells, degs, err := m.Stats.UnitHistogram(ctx, h, key, cols, sizes, grid, bound)
	if m.mut == mutOneChildNoise {
		for k := range cells {
			cells[k].Count *= m.r
		}
	}
	return cells, degs, err
}

func (m mutStats) UnitMarginalL2(ctx context.Context, h *hypergraph.Hypergraph, key engine.UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]engine.Cell, error) {
	if m.unbounded(cols) {
		bound = 1 << 40
	}
	cells, err := m.Stats.UnitMarginalL2(ctx, h, key, cols, sizes, grid, bound)
	if m.mut == mutOneChildNoise {
		for k := range cells {
			cells[k].Count *= m.r
		}
	}
	return cells, err
}

// fanoutPenalty·j/ε is the public penalty of candidate j. With 1 (the
// row count's), the choice decays by e^(−1/2) a rung above the best clip
// and a TPC-H run in three drew a clip of 1,023 orders per customer for a
// true largest of 41, whose empty bins then took noise and drew customers
// with hundreds of orders; with 2 the decay is e^(−1) a rung.
const fanoutPenalty = 2

// chooseFanoutClip chooses an edge's clip candidate j ∈ [1, n] by the
// exponential mechanism at eps (sensitivity 1) from counts, the number
// of units by their largest fan-out on the edge: score −#{units whose
// largest fan-out is above τ_j} − fanoutPenalty·j/eps (the penalty is public and keeps
// the choice off clips far above every unit).
func chooseFanoutClip(src dp.Source, counts map[int64]int64, eps float64) int {
	scores := make([]float64, fanoutClipCandidates)
	best := 0
	for j := 1; j <= fanoutClipCandidates; j++ {
		var above int64
		for f, u := range counts {
			if f > fanoutClip(j) {
				above += u
			}
		}
		scores[j-1] = -float64(above) - fanoutPenalty*float64(j)/eps
		if scores[j-1] > scores[best] {
			best = j - 1
		}
	}
	if tablesMutation == mutTrueFanoutClip {
		return 1 + best
	}
	return 1 + dp.ExponentialGrid(src, scores, eps, 1, 0)
}

// tablesRun is a charged tables release.
type tablesRun struct {
	plan    *Plan
	tree    *ownTree
	owner   func(string) (string, bool)
	hooks   Hooks
	epsEdge float64
	ledgers []*dp.Ledger

	clips  map[int]int   // child index → chosen candidate j
	public [][]*publicFK // per table, its foreign keys into public tables
	levels []*level      // per table
	synth  []*synthTable // per table
}

func (r *tablesRun) Algorithm() string {
	return "tables release: per-edge DP fan-out clips + one privacy-unit level (bounded path join, factored PMW) per table of the ownership tree, drawn top down"
}

// synthTable is one drawn table: every row's parent row and the bins of
// its level's own columns (row-major, level.ownWidth() per row; a row's
// context columns are its ancestors' own columns, read through parent).
type synthTable struct {
	rows   int64
	parent []int32
	seq    []int32 // the row's number among its parent's children, from 1
	bins   []int32
}

// tablesStats is what the tables release reads from the engine (an
// interface so that the audits run the whole release on an instance held
// in Go, tables_audit_test.go; *engine.Engine implements it).
type tablesStats interface {
	privacyunit.Stats
	UnitMaxFanout(ctx context.Context, unitKey string, path []engine.Hop, f func(fanout, units int64) error) error
	AddFanout(ctx context.Context, h engine.Hop, cols ...engine.FanoutColumn) error
	AddMode(ctx context.Context, h engine.Hop, name, col string, size int) error
	Fold(ctx context.Context, f *hypergraph.Folding) error
}

var _ tablesStats = (*engine.Engine)(nil)

func (r *tablesRun) Run(ctx context.Context, src dp.Source, eng *engine.Engine) (*Output, error) {
	out, err := r.run(ctx, src, eng)
	if err != nil {
		return nil, err
	}
	if err := r.choosePublicKeys(ctx, src, eng); err != nil {
		return nil, err
	}
	unmatched := map[string]any{}
	for i, fks := range r.public {
		for _, fk := range fks {
			unmatched[r.tree.tables[i].name+"."+fk.column] = fk.unmatched
		}
	}
	if len(unmatched) > 0 {
		out.Params["public_foreign_keys_unmatched"] = unmatched
	}
	return out, nil
}

func (r *tablesRun) run(ctx context.Context, src dp.Source, eng tablesStats) (*Output, error) {
	s, tree := r.plan.Spec, r.tree
	// 1. Fan-out clips, edge by edge.
	r.clips = map[int]int{}
	bins, classes := map[int]int{}, map[int]int{}
	clipParams := map[string]any{}
	for i := 1; i < len(tree.tables); i++ {
		counts := map[int64]int64{}
		if err := eng.UnitMaxFanout(ctx, s.Table(s.Privacy.Unit).PrimaryKey[0], tree.hops(s, i), func(f, u int64) error {
			counts[f] += u
			return nil
		}); err != nil {
			return nil, err
		}
		j := chooseFanoutClip(src, counts, r.epsEdge)
		r.clips[i], bins[i] = j, j+1
		tb := tree.tables[i]
		clipParams[tree.tables[tb.parent].name+"→"+tb.name] = fanoutClip(j)
		r.ledgers[0].Publish("fanout_clip_"+tb.name, float64(fanoutClip(j)))
		hop := tree.hops(s, i)[len(tree.hops(s, i))-1]
		classes[i] = len(classLows(j))
		if err := eng.AddFanout(ctx, hop, engine.FanoutColumn{Name: fanName(tb.name), Lows: fanoutLows[:j+1]}, engine.FanoutColumn{Name: className(tb.name), Lows: classLows(j)}); err != nil {
			return nil, err
		}
		if sc := tb.sibling; sc.Column != "" {
			if err := eng.AddMode(ctx, hop, siblingName(tb.name), sc.Column, s.Column(sc).Size()); err != nil {
				return nil, err
			}
		}
	}
	// 2. One privacy-unit level per table.
	var signals []Signal
	levelRows := map[string]any{}
	joints := make([][]float64, len(tree.tables))
	var unitRows int64
	for i := range tree.tables {
		lv := tree.levelLayout(s, i, bins, classes)
		ls := tree.levelSpec(s, lv, r.owner, bins, r.clips)
		r.levels = append(r.levels, lv)
		lp, err := NewPlan(ls, r.plan.MemoryCap, r.plan.Rounds, r.plan.MaxRounds)
		if err != nil {
			return nil, fmt.Errorf("release: level of %s: %w", tree.tables[i].name, err)
		}
		if err := eng.Fold(ctx, lp.Folding); err != nil {
			return nil, err
		}
		plan, err := privacyunit.Prepare(ls, lp.Folding, privacyunit.Config{
			Epsilon: r.ledgers[i].Total().Epsilon, Delta: r.ledgers[i].Total().Delta,
			Columns: spec.FoldColumns(lp.Folding, ls.Release.Columns), Universe: lp.Universe, Families: lp.Families,
			Bound: ls.Release.Bound(), AutoBound: ls.Release.ContributionBoundAuto, Noise: pmw.Noise(ls.PMW.Noise), Rounds: lp.Rounds, MaxRounds: lp.MaxRounds, Progress: r.hooks.Round,
			Factored: lp.Factored, Names: lp.Names, Sizes: lp.Sizes, L2: unitL2(ls, lp.Factored), NoCount: true, Own: lv.ownColumns(lp.Factored), InitLow: lv.contextInit(lp.Factored), InitLowShare: contextShare, KeysChecked: true,
		}, r.ledgers[i])
		if err != nil {
			return nil, fmt.Errorf("release: level of %s: %w", tree.tables[i].name, err)
		}
		res, err := plan.Run(ctx, src, levelStats(eng, i, ls.Release.Bound()))
		if err != nil {
			return nil, fmt.Errorf("release: level of %s: %w", tree.tables[i].name, err)
		}
		if f := res.Factored; f != nil {
			if joints[i], err = f.Joint(maxLevelCells); err != nil {
				return nil, err
			}
			signals = append(signals, prefixSignals(tree.tables[i].name, signalsOf(f.Signals))...)
		} else {
			joints[i] = res.PMW.Joint()
			signals = append(signals, prefixSignals(tree.tables[i].name, signalsOf(res.PMW.Signals))...)
		}
		if i == 0 {
			unitRows = res.Rows
		}
		levelRows[tree.tables[i].name] = res.Rows
	}
	// 3. Draw the tables top down (post-processing).
	rnd := rand.New(src)
	if err := r.draw(ctx, rnd, joints, unitRows); err != nil {
		return nil, err
	}
	tableRows := map[string]any{}
	atClip, childrenAtClip := map[string]any{}, map[string]any{}
	for i, st := range r.synth {
		tableRows[tree.tables[i].name] = st.rows
		if i == 0 {
			continue
		}
		// The share of the synthetic parents drawn in the edge's last
		// (clipped) fan-out bin: the model's estimate (DP) of the parents
		// the clip reaches; and the share of the synthetic children under
		// them, which stand for every child of those parents, the ones
		// above the clip included.
		//
		// The share of the true children the clip cut, Σ_p max(0, n_p −
		// τ) / Σ_p n_p, is not a function of what the release measures:
		// the fan-out column holds every count at or above the clipped
		// bin's low end in one bin, and the child level bounds each
		// unit's rows to r, so no DP output sees how far above τ a parent
		// goes. Estimating it costs budget, and under the unit neighbour
		// relation one unit can move it from 0 to nearly 1 (a unit with
		// 10,000 children above the clip among 2,000 that have one), so
		// it needs its own per-unit bound too, which hides exactly the
		// heavy units it is asked about. A sensitivity-1 count with σ =
		// 10 would cost ρ = 0.005, a fifth of the whole release's ρ ≈
		// 0.024 at ε = 1, δ = 10⁻⁶. Chosen: no budget; these two shares,
		// post-processing of the drawn tables (docs/relational.md).
		par := tree.tables[i].parent
		pst, plv := r.synth[par], r.levels[par]
		at := slices.IndexFunc(plv.cols, func(c levelCol) bool { return c.key == fanKey(tree.tables[i].name) })
		clipped := make([]bool, pst.rows)
		var n int64
		for p := int64(0); p < pst.rows && at >= 0; p++ {
			if int(pst.bins[p*int64(plv.ownWidth())+int64(at-plv.nCtx)]) == r.clips[i] {
				clipped[p] = true
				n++
			}
		}
		edge := tree.tables[par].name + "→" + tree.tables[i].name
		if pst.rows > 0 {
			atClip[edge] = float64(n) / float64(pst.rows)
		}
		var kids int64
		for _, p := range st.parent {
			if clipped[p] {
				kids++
			}
		}
		if st.rows > 0 {
			childrenAtClip[edge] = float64(kids) / float64(st.rows)
		}
	}
	cells, counts, total, err := r.joinCells()
	if err != nil {
		return nil, err
	}
	unit := s.Privacy.Unit
	out := &Output{Algorithm: r.Algorithm(), NHat: float64(total), DeltaTilde: 1, Params: map[string]any{
		"privacy_unit":                 unit,
		"release_output":               string(spec.OutputTables),
		"contribution_bound":           s.Release.Bound(),
		"fanout_clips":                 clipParams,
		"fanout_parents_at_clip":       atClip,
		"fanout_children_at_clip":      childrenAtClip,
		"level_dp_row_counts":          levelRows,
		"synthetic_table_rows":         tableRows,
		"fanout_clip_epsilon_per_edge": r.epsEdge,
	}, Signals: signals, Variant: "mwem (factored) per level", Rounds: len(tree.tables)}
	out.Counts = func(_ dp.Source, emit func(cell, count int64) error) error {
		for k, c := range cells {
			if err := emit(c, counts[k]); err != nil {
				return err
			}
		}
		return nil
	}
	out.WriteTables = r.writeTables
	return out, nil
}

func signalsOf(ss []pmw.Signal) []Signal { return signals(ss, privacyunit.Grid) }

func prefixSignals(table string, ss []Signal) []Signal {
	for i := range ss {
		ss[i].Marginal = table + ": " + ss[i].Marginal
	}
	return ss
}

// maxSynthRows bounds the rows drawn in all tables together (public).
const maxSynthRows = 200_000_000

// draw draws every table top down: the unit's rows from its level, then
// each child table's rows, parent by parent, as many as the parent's
// drawn fan-out, with their own columns from the level conditioned on
// their context.
//
// Controlled rounding, not independent draws. Drawing the 1,500 TPC-H
// customers one by one from the unit level put the customer table's
// marginals 0.035–0.044 TVD off the model at ε = 600 (multinomial
// sampling of 1,500 rows over 300 cells), more than the noise at ε = 1.
// So every count is rounded, as pmw's sampler rounds the flat release:
//   - a context's children (all child rows whose context, the parent's
//     columns and fan-out class, is c) are split over the own cells by
//     systematic rounding of n_c·P(y | c), each count the floor or the
//     ceiling of its expectation, and the split is dealt to the children
//     as a shuffled deck (each child's cell has the model's law given c);
//   - the contexts are split in increasing order, and what each own cell
//     y was rounded up or down so far (its carry) is added to its target
//     in the next context where the model gives y weight: a marginal of
//     the own columns over all contexts, or over a run of contexts (one
//     value of the first context column), stays within about a row per
//     cell of the model's, instead of adding every context's rounding;
//   - the counts of a fan-out bin that spans several values (8–11, …)
//     are spread evenly over its values by the same rounding.
//
// It is post-processing of the levels' DP models with src's randomness.
func (r *tablesRun) draw(ctx context.Context, rnd *rand.Rand, joints [][]float64, units int64) error {
	tree := r.tree
	r.synth = make([]*synthTable, len(tree.tables))
	var drawn int64
	for i := range tree.tables {
		if err := ctx.Err(); err != nil {
			return err
		}
		lv := r.levels[i]
		nc, no := lv.cells()
		width := lv.ownWidth()
		st := &synthTable{}
		r.synth[i] = st
		if i == 0 {
			if units > maxSynthRows {
				return fmt.Errorf("release: the DP unit count %d is above the tables release's cap of %d rows", units, int64(maxSynthRows))
			}
			st.rows = units
			st.parent = make([]int32, units)
			st.seq = make([]int32, units)
			for u := range st.parent {
				st.parent[u], st.seq[u] = -1, 1
			}
			st.bins = make([]int32, units*int64(width))
			ys := newRounder(joints[0], nc, no).split(rnd, 0, units)
			for u, y := range ys {
				lv.putOwn(st.bins[int64(u)*int64(width):int64(u+1)*int64(width)], int64(y))
			}
			drawn += units
			continue
		}
		par := tree.tables[i].parent
		plv, pst := r.levels[par], r.synth[par]
		pw := plv.ownWidth()
		// Every context column is an own column of an ancestor's level
		// (a coarse class read off the fine fan-out bin of its edge, kept
		// by the edge's parent).
		src := make([]ownRef, lv.nCtx)
		for k := 0; k < lv.nCtx; k++ {
			c := lv.cols[k]
			key := c.key
			if c.class {
				key = fanKey(tree.tables[c.fanChild].name)
				src[k].coarse = classLows(r.clips[c.fanChild])
			}
			src[k].table = -1
			for a := par; a >= 0 && src[k].table < 0; a = tree.tables[a].parent {
				if at := r.levels[a].ownAt(key); at >= 0 {
					src[k].table, src[k].pos = a, at
				}
			}
			if src[k].table < 0 {
				return fmt.Errorf("release: level of %s: context column %s is not an own column of an ancestor's level", tree.tables[i].name, c.key)
			}
		}
		rowAt := make([]int64, len(tree.tables))
		// 1. Every parent's fan-out: its drawn bin, spread over the bin's
		// values by rounding, parents of one bin together.
		fanAt := plv.ownAt(fanKey(tree.tables[i].name))
		j := r.clips[i]
		binOf := make([]int32, pst.rows)
		for p := range binOf {
			binOf[p] = pst.bins[int64(p)*int64(pw)+int64(fanAt)]
		}
		byBin := groupBy(binOf, int64(j+1))
		fan := binOf // reused: parent p's fan-out replaces its bin
		var rows int64
		for b := 0; b <= j; b++ {
			ps := byBin.members(int64(b))
			lo, hi := fanoutLows[b], fanoutClip(b)
			for k, v := range spread(rnd, hi-lo+1, int64(len(ps))) {
				fan[ps[k]] = int32(lo + int64(v))
				rows += lo + int64(v)
			}
		}
		drawn += rows
		if drawn > maxSynthRows {
			return fmt.Errorf("release: the synthetic tables would hold more than %d rows in all (a DP output): release.output join, or a smaller ε-independent domain", int64(maxSynthRows))
		}
		// 2. The children, in parent order, with their context cells.
		st.rows = rows
		st.parent = make([]int32, 0, rows)
		st.seq = make([]int32, 0, rows)
		st.bins = make([]int32, rows*int64(width))
		cellOf := make([]int32, 0, rows)
		ctxBins := make([]int32, lv.nCtx)
		for p := int64(0); p < pst.rows; p++ {
			n := int64(fan[p])
			if n == 0 {
				continue
			}
			for a, x := par, p; a >= 0; a = tree.tables[a].parent {
				rowAt[a] = x
				if tree.tables[a].parent >= 0 {
					x = int64(r.synth[a].parent[x])
				}
			}
			var c int64
			for k := 0; k < lv.nCtx; k++ {
				sr := src[k]
				ctxBins[k] = r.synth[sr.table].bins[rowAt[sr.table]*int64(r.levels[sr.table].ownWidth())+int64(sr.pos)]
				if sr.coarse != nil {
					ctxBins[k] = classOf(sr.coarse, int(ctxBins[k]))
				}
				c = c*int64(lv.cols[k].size) + int64(ctxBins[k])
			}
			for q := int64(1); q <= n; q++ {
				st.parent = append(st.parent, int32(p))
				st.seq = append(st.seq, int32(q))
				cellOf = append(cellOf, int32(c))
			}
		}
		// 3. Their own cells, context by context in increasing order.
		byCtx := groupBy(cellOf, nc)
		rd := newRounder(joints[i], nc, no)
		for c := int64(0); c < nc; c++ {
			members := byCtx.members(c)
			if len(members) == 0 {
				continue
			}
			for k, y := range rd.split(rnd, c, int64(len(members))) {
				row := int64(members[k])
				lv.putOwn(st.bins[row*int64(width):(row+1)*int64(width)], int64(y))
			}
		}
	}
	return nil
}

// putOwn writes own cell y into a drawn row's own columns (mixed radix,
// the last column least significant).
func (lv *level) putOwn(row []int32, y int64) {
	own := lv.cols[lv.nCtx:]
	for k := len(own) - 1; k >= 0; k-- {
		sz := int64(own[k].size)
		row[k] = int32(y % sz)
		y /= sz
	}
}

// ownWidth is the number of own columns: the width of a drawn row.
func (lv *level) ownWidth() int { return len(lv.cols) - lv.nCtx }

// ownAt is the position of the own column key in a drawn row, −1 when
// key is not an own column of the level.
func (lv *level) ownAt(key string) int {
	for k := lv.nCtx; k < len(lv.cols); k++ {
		if lv.cols[k].key == key {
			return k - lv.nCtx
		}
	}
	return -1
}

// ownRef locates a context column of a level in a drawn ancestor table:
// own column pos of table's drawn rows, coarsened by the class lows
// coarse when non-nil.
type ownRef struct {
	table, pos int
	coarse     []int64
}

// rounder splits the children of each context over the own cells by
// controlled rounding (see [tablesRun.draw]).
type rounder struct {
	joint    []float64
	nc, no   int64
	carry    []float64
	marginal []float64 // the own cells' marginal, for contexts of zero weight
	w        []float64 // scratch: one context's rounding weights
	counts   []int64   // scratch: one context's rounded counts
}

func newRounder(joint []float64, nc, no int64) *rounder {
	return &rounder{joint: joint, nc: nc, no: no, carry: make([]float64, no), w: make([]float64, no), counts: make([]int64, no)}
}

// split returns the own cells of n children of context c, in a random
// order: systematic rounding of n·P(y | c) plus each cell's carry (only
// where P(y | c) > 0), the carry updated by what was rounded.
func (rd *rounder) split(rnd *rand.Rand, c, n int64) []int32 {
	q := rd.joint[c*rd.no : (c+1)*rd.no]
	var tot float64
	for _, v := range q {
		tot += max(v, 0)
	}
	if !(tot > 0) {
		if rd.marginal == nil {
			rd.marginal = make([]float64, rd.no)
			for x := int64(0); x < rd.nc; x++ {
				for y := int64(0); y < rd.no; y++ {
					rd.marginal[y] += max(rd.joint[x*rd.no+y], 0)
				}
			}
		}
		q = rd.marginal
		for _, v := range q {
			tot += v
		}
	}
	if !(tot > 0) {
		out := make([]int32, n)
		for k := range out {
			out[k] = int32(rnd.Int64N(rd.no))
		}
		return out
	}
	w := rd.w
	var wt float64
	for y, v := range q {
		w[y] = 0
		if v > 0 {
			w[y] = max(float64(n)*v/tot+rd.carry[y], 0)
			wt += w[y]
		}
	}
	if !(wt > 0) {
		for y, v := range q {
			w[y] = max(v, 0)
		}
	}
	out := make([]int32, 0, n)
	counts := systematicInto(rd.counts, rnd, w, n)
	for y, k := range counts {
		if q[y] > 0 {
			rd.carry[y] += float64(n)*q[y]/tot - float64(k)
		}
		for ; k > 0; k-- {
			out = append(out, int32(y))
		}
	}
	rnd.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

// systematic rounds n·w/Σw to integers that add up to n, each the floor
// or the ceiling of its expectation (systematic sampling with one uniform
// offset); w ≥ 0 with a positive sum.
func systematic(rnd *rand.Rand, w []float64, n int64) []int64 {
	return systematicInto(make([]int64, len(w)), rnd, w, n)
}

// systematicInto is [systematic] writing into out (len(w) long).
func systematicInto(out []int64, rnd *rand.Rand, w []float64, n int64) []int64 {
	var tot float64
	for _, v := range w {
		tot += v
	}
	u := rnd.Float64()
	var cum float64
	var prev int64
	for y, v := range w {
		cum += v / tot * float64(n)
		f := min(int64(math.Floor(cum+u)), n)
		if y == len(w)-1 {
			f = n
		}
		out[y] = f - prev
		prev = f
	}
	return out
}

// spread returns n values in [0, k), each value about n/k times (by
// systematic rounding), in a random order.
func spread(rnd *rand.Rand, k, n int64) []int32 {
	if k == 1 {
		return make([]int32, n)
	}
	w := make([]float64, k)
	for v := range w {
		w[v] = 1
	}
	out := make([]int32, 0, n)
	for v, c := range systematic(rnd, w, n) {
		for ; c > 0; c-- {
			out = append(out, int32(v))
		}
	}
	rnd.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

// ctxGroups lists row indices grouped by their context cell (a counting
// sort): members(c) are the rows of context c, increasing.
type ctxGroups struct {
	start []int64 // start[c] … start[c+1] in rows
	rows  []int32
}

func groupBy(cellOf []int32, nc int64) ctxGroups {
	g := ctxGroups{start: make([]int64, nc+1), rows: make([]int32, len(cellOf))}
	for _, c := range cellOf {
		g.start[c+1]++
	}
	for c := int64(1); c <= nc; c++ {
		g.start[c] += g.start[c-1]
	}
	next := slices.Clone(g.start[:nc])
	for r, c := range cellOf {
		g.rows[next[c]] = int32(r)
		next[c]++
	}
	return g
}

func (g ctxGroups) members(c int64) []int32 { return g.rows[g.start[c]:g.start[c+1]] }

// joinCells is the join of the drawn tables over the release's columns:
// every cell's count, cells increasing; and the join's rows.
func (r *tablesRun) joinCells() (cells, counts []int64, total int64, err error) {
	p, tree := r.plan, r.tree
	strides := make([]int64, len(p.Sizes))
	st := int64(1)
	for k := len(p.Sizes) - 1; k >= 0; k-- {
		strides[k] = st
		st *= int64(p.Sizes[k])
	}
	flat := map[string]int{}
	for k, ref := range p.Spec.Release.Columns {
		flat[releasedKey(ref)] = k
	}
	// A row's share of the join cell is the sum of its own released
	// columns' bins × strides: own[i] lists table i's (position in a
	// drawn row, stride) pairs. part[i][row] holds the shares of the
	// tables with children (a leaf's, the most rows, are computed where
	// they are read: 8 bytes a line item at SF 10 is half a gigabyte).
	type posStride struct{ pos, stride int64 }
	own := make([][]posStride, len(tree.tables))
	for i := range tree.tables {
		lv := r.levels[i]
		for k := lv.nCtx; k < len(lv.cols); k++ {
			if f, ok := flat[lv.cols[k].key]; ok {
				own[i] = append(own[i], posStride{int64(k - lv.nCtx), strides[f]})
			}
		}
	}
	share := func(i int, row int64) int64 {
		w := int64(r.levels[i].ownWidth())
		b := r.synth[i].bins[row*w : (row+1)*w]
		var v int64
		for _, ps := range own[i] {
			v += int64(b[ps.pos]) * ps.stride
		}
		return v
	}
	part := make([][]int64, len(tree.tables))
	for i, t := range tree.tables {
		if len(t.children) == 0 {
			continue
		}
		part[i] = make([]int64, r.synth[i].rows)
		for row := range part[i] {
			part[i][row] = share(i, int64(row))
		}
	}
	partAt := func(i int, row int64) int64 {
		if part[i] != nil {
			return part[i][row]
		}
		return share(i, row)
	}
	acc := map[int64]int64{}
	// first[c] holds each parent row's first row of child table c (a
	// prefix sum: a child table's rows are grouped by parent, in parent
	// order), for trees that are not a chain.
	first := make([][]int64, len(tree.tables))
	var sub func(i int, row int64) []int64
	sub = func(i int, row int64) []int64 {
		out := []int64{partAt(i, row)}
		for _, c := range tree.tables[i].children {
			var union []int64
			for cr := first[c][row]; cr < first[c][row+1]; cr++ {
				union = append(union, sub(c, cr)...)
			}
			next := make([]int64, 0, len(out)*len(union))
			for _, a := range out {
				for _, b := range union {
					next = append(next, a+b)
				}
			}
			out = next
			if len(out) == 0 {
				return nil
			}
		}
		return out
	}
	chain, leaf := true, 0
	for i, t := range tree.tables {
		chain = chain && len(t.children) <= 1
		if len(t.children) == 0 {
			leaf = i
		}
	}
	if chain {
		// A chain's join rows are its deepest table's rows, each with its
		// ancestors: no product to expand.
		for row := int64(0); row < r.synth[leaf].rows; row++ {
			c := int64(0)
			for i, x := leaf, row; ; {
				c += partAt(i, x)
				par := tree.tables[i].parent
				if par < 0 {
					break
				}
				x, i = int64(r.synth[i].parent[x]), par
			}
			acc[c]++
			total++
		}
	} else {
		for i := 1; i < len(tree.tables); i++ {
			f := make([]int64, r.synth[tree.tables[i].parent].rows+1)
			for _, pr := range r.synth[i].parent {
				f[pr+1]++
			}
			for k := 1; k < len(f); k++ {
				f[k] += f[k-1]
			}
			first[i] = f
		}
		for u := int64(0); u < r.synth[0].rows; u++ {
			for _, c := range sub(0, u) {
				acc[c]++
				total++
			}
		}
	}
	cells = make([]int64, 0, len(acc))
	for c := range acc {
		cells = append(cells, c)
	}
	slices.Sort(cells)
	counts = make([]int64, len(cells))
	for k, c := range cells {
		counts[k] = acc[c]
	}
	return cells, counts, total, nil
}

// tableColumns returns, for table i, the released columns it owns: their
// output names (as in the join file) and positions in its drawn rows.
func (r *tablesRun) tableColumns(i int) (names []string, cols []*spec.Column, at []int) {
	p := r.plan
	flat := map[string]int{}
	for k, ref := range p.Spec.Release.Columns {
		flat[releasedKey(ref)] = k
	}
	lv := r.levels[i]
	for k := lv.nCtx; k < len(lv.cols); k++ {
		if f, ok := flat[lv.cols[k].key]; ok {
			names = append(names, p.Names[f])
			cols = append(cols, p.Columns[f])
			at = append(at, k-lv.nCtx)
		}
	}
	return names, cols, at
}
