package score

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/synth-dp/synth/spec"
)

// GroupQuery is one group query of the PrivLava/PrivPetal evaluation
// protocol (docs/relational-eval.md) on the edge Parent→Child: the number
// of parent rows
//
//   - whose fan-out (number of children) lies in [FanLo, FanHi] (FanHi < 0:
//     no upper end),
//   - whose released column ParentCol (a release position; −1: no
//     condition) has its bin in ParentSet,
//   - and at least K of whose children have the released column ChildCol
//     (−1: every child qualifies) in ChildSet.
type GroupQuery struct {
	Parent, Child string
	FanLo, FanHi  int
	ParentCol     int
	ParentSet     []int
	ChildCol      int
	ChildSet      []int
	K             int
}

// String renders the query for humans, with names the released columns'
// output names.
func (q GroupQuery) String(names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%s with %s count in [%d, ", q.Parent, q.Child, q.FanLo)
	if q.FanHi < 0 {
		b.WriteString("∞)")
	} else {
		fmt.Fprintf(&b, "%d]", q.FanHi)
	}
	if q.ParentCol >= 0 {
		fmt.Fprintf(&b, ", %s bin in %v", names[q.ParentCol], q.ParentSet)
	}
	fmt.Fprintf(&b, ", ≥ %d %s", q.K, q.Child)
	if q.ChildCol >= 0 {
		fmt.Fprintf(&b, " with %s bin in %v", names[q.ChildCol], q.ChildSet)
	}
	return b.String()
}

// The generator's public constants (docs/relational-eval.md).
const (
	// DefaultGroupQueries is the number of queries of the protocol.
	DefaultGroupQueries = 1000
	// DefaultGroupSeed seeds the protocol's generator.
	DefaultGroupSeed = 37
	// groupFanBins is the number of fan-out bins 1.. a range is drawn
	// from; the last (2^(groupFanBins−1) and more) is open-ended.
	groupFanBins = 9
	// groupMaxK bounds k, drawn uniformly from 1..groupMaxK.
	groupMaxK = 3
)

// GroupQueries draws n group queries over the edges of tr from a
// generator seeded with seed: a public function of the spec, the tree, n
// and the seed, never of the data. Each query draws, uniformly and
// independently: an edge; two fan-out bins lo ≤ hi among 1..9 (bins of
// [FanOutBin]; the range runs from the first count of lo to the last of
// hi, bin 9 open-ended); a released column of the parent, or none when it
// has none, and a subset of its bins of a uniform size in 1..n−1 (no
// condition for a column of one bin); the same for a child column; and k
// in 1..3.
func GroupQueries(s *spec.Spec, tr *Tree, n int, seed uint64) []GroupQuery {
	if len(tr.Edges) == 0 || n <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x726c6576616c)) // evaluation only: a public, seeded generator
	sizes := s.ReleaseSizes()
	subset := func(cols []int) (int, []int) {
		if len(cols) == 0 {
			return -1, nil
		}
		c := cols[rng.IntN(len(cols))]
		if sizes[c] < 2 {
			return -1, nil
		}
		k := 1 + rng.IntN(sizes[c]-1)
		set := rng.Perm(sizes[c])[:k]
		slices.Sort(set)
		return c, set
	}
	out := make([]GroupQuery, n)
	for i := range out {
		e := tr.Edges[rng.IntN(len(tr.Edges))]
		a, b := 1+rng.IntN(groupFanBins), 1+rng.IntN(groupFanBins)
		if a > b {
			a, b = b, a
		}
		q := GroupQuery{Parent: e.Parent, Child: e.Child, FanLo: 1 << (a - 1), FanHi: 1<<b - 1}
		if b == groupFanBins {
			q.FanHi = -1
		}
		q.ParentCol, q.ParentSet = subset(tr.Columns[e.Parent])
		q.ChildCol, q.ChildSet = subset(tr.Columns[e.Child])
		q.K = 1 + rng.IntN(groupMaxK)
		out[i] = q
	}
	return out
}

// groupIndex holds, for one edge of one release, every parent's children.
type groupIndex struct {
	parent, child *Entities
	children      [][]int // parent row -> child rows
}

func newGroupIndex(ts *Tables, parent, child string) (*groupIndex, error) {
	p, c := ts.Get(parent), ts.Get(child)
	if p == nil || c == nil {
		return nil, fmt.Errorf("score: no edge %s→%s in the release", parent, child)
	}
	g := &groupIndex{parent: p, child: c, children: make([][]int, len(p.Rows))}
	for i, pr := range c.Parent {
		g.children[pr] = append(g.children[pr], i)
	}
	return g, nil
}

// col returns the position of release column pos in e's Cols.
func col(e *Entities, pos int) int { return slices.Index(e.Cols, pos) }

// mask returns the bins of set as a lookup table over a column of size
// bins; nil for no set.
func mask(set []int, size int) []bool {
	if set == nil {
		return nil
	}
	m := make([]bool, size)
	for _, b := range set {
		m[b] = true
	}
	return m
}

// count answers q on the release g indexes; sizes are the released
// columns' numbers of bins.
func (g *groupIndex) count(q GroupQuery, sizes []int) int {
	pc, cc := -1, -1
	var pm, cm []bool
	if q.ParentCol >= 0 {
		pc, pm = col(g.parent, q.ParentCol), mask(q.ParentSet, sizes[q.ParentCol])
	}
	if q.ChildCol >= 0 {
		cc, cm = col(g.child, q.ChildCol), mask(q.ChildSet, sizes[q.ChildCol])
	}
	n := 0
	for i, kids := range g.children {
		f := len(kids)
		if f < q.FanLo || (q.FanHi >= 0 && f > q.FanHi) || f < q.K {
			continue
		}
		if pc >= 0 && !pm[g.parent.Rows[i][pc]] {
			continue
		}
		hits := 0
		for _, k := range kids {
			if cc < 0 || cm[g.child.Rows[k][cc]] {
				hits++
				if hits >= q.K {
					break
				}
			}
		}
		if hits >= q.K {
			n++
		}
	}
	return n
}

// GroupEdgeScore is the group queries' error on one edge.
type GroupEdgeScore struct {
	Parent  string  `json:"parent"`
	Child   string  `json:"child"`
	Queries int     `json:"queries"`
	Mean    float64 `json:"mean"`
	Median  float64 `json:"median"`
}

// GroupScore is the error of a set of group queries: for each,
// |true − synthetic·(N/N̂)| / max(true, N/100), N the true and N̂ the
// synthetic number of parent rows (the synthetic count rescaled to the
// true population).
type GroupScore struct {
	Queries int              `json:"queries"`
	Seed    uint64           `json:"seed"`
	Mean    float64          `json:"mean"`
	Median  float64          `json:"median"`
	Edges   []GroupEdgeScore `json:"edges"`
	// ZeroTrue counts the queries whose true answer is 0.
	ZeroTrue int `json:"zero_true"`
	// Errors holds every query's error, in query order.
	Errors []float64 `json:"-"`
}

// GroupError is the error of one group query with true answer t on N true
// parents and synthetic answer y on n̂ synthetic parents:
// |t − y·N/n̂| / max(t, N/100); with n̂ = 0 the rescaled answer is 0.
func GroupError(t, y float64, n, nHat int) float64 {
	scaled := 0.0
	if nHat > 0 {
		scaled = y * float64(n) / float64(nHat)
	}
	return math.Abs(t-scaled) / math.Max(t, float64(n)/100)
}

// ScoreGroups answers the queries on the true and synthetic tables and
// summarises their errors ([GroupError]), over all queries and per edge.
func ScoreGroups(s *spec.Spec, truth, syn *Tables, qs []GroupQuery, seed uint64) (*GroupScore, error) {
	sizes := s.ReleaseSizes()
	type key struct{ p, c string }
	tIdx, sIdx := map[key]*groupIndex{}, map[key]*groupIndex{}
	out := &GroupScore{Queries: len(qs), Seed: seed}
	per := map[key][]float64{}
	for _, q := range qs {
		k := key{q.Parent, q.Child}
		if tIdx[k] == nil {
			var err error
			if tIdx[k], err = newGroupIndex(truth, q.Parent, q.Child); err != nil {
				return nil, err
			}
			if sIdx[k], err = newGroupIndex(syn, q.Parent, q.Child); err != nil {
				return nil, err
			}
		}
		t, y := tIdx[k].count(q, sizes), sIdx[k].count(q, sizes)
		if t == 0 {
			out.ZeroTrue++
		}
		e := GroupError(float64(t), float64(y), len(tIdx[k].parent.Rows), len(sIdx[k].parent.Rows))
		out.Errors = append(out.Errors, e)
		per[k] = append(per[k], e)
	}
	out.Mean, out.Median = meanMedian(out.Errors)
	for _, e := range truth.Tree.Edges {
		v := per[key{e.Parent, e.Child}]
		if len(v) == 0 {
			continue
		}
		m, md := meanMedian(v)
		out.Edges = append(out.Edges, GroupEdgeScore{Parent: e.Parent, Child: e.Child, Queries: len(v), Mean: m, Median: md})
	}
	return out, nil
}

// meanMedian returns the mean and the median (the mean of the two middle
// values for an even count) of v; 0, 0 for none.
func meanMedian(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	t := 0.0
	for _, x := range s {
		t += x
	}
	m := len(s) / 2
	med := s[m]
	if len(s)%2 == 0 {
		med = (s[m-1] + s[m]) / 2
	}
	return t / float64(len(s)), med
}
