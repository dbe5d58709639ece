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

// groupIndex holds one edge of one release laid out for counting: the
// children grouped by parent (parent i's are positions start[i] …
// start[i+1]−1) and every released column as one array of bins, parents'
// by row, children's in the grouped order.
type groupIndex struct {
	parent, child *Entities
	start         []int32
	pcols, ccols  [][]int32
}

func newGroupIndex(ts *Tables, parent, child string) (*groupIndex, error) {
	p, c := ts.Get(parent), ts.Get(child)
	if p == nil || c == nil {
		return nil, fmt.Errorf("score: no edge %s→%s in the release", parent, child)
	}
	g := &groupIndex{parent: p, child: c, start: make([]int32, len(p.Rows)+1)}
	for _, pr := range c.Parent {
		g.start[pr+1]++
	}
	for i := range p.Rows {
		g.start[i+1] += g.start[i]
	}
	next := slices.Clone(g.start[:len(p.Rows)])
	order := make([]int32, len(c.Rows))
	for k, pr := range c.Parent {
		order[next[pr]] = int32(k)
		next[pr]++
	}
	g.pcols = make([][]int32, len(p.Cols))
	for j := range p.Cols {
		col := make([]int32, len(p.Rows))
		for i, r := range p.Rows {
			col[i] = int32(r[j])
		}
		g.pcols[j] = col
	}
	g.ccols = make([][]int32, len(c.Cols))
	for j := range c.Cols {
		col := make([]int32, len(order))
		for x, k := range order {
			col[x] = int32(c.Rows[k][j])
		}
		g.ccols[j] = col
	}
	return g, nil
}

// col returns the position of release column pos in e's Cols.
func col(e *Entities, pos int) int { return slices.Index(e.Cols, pos) }

// mask returns the bins of set as a lookup table over a column of size
// bins.
func mask(set []int, size int) []bool {
	m := make([]bool, size)
	for _, b := range set {
		m[b] = true
	}
	return m
}

// count answers q on the release g indexes; sizes are the released
// columns' numbers of bins.
func (g *groupIndex) count(q GroupQuery, sizes []int) int {
	var pcol, ccol []int32
	var pm, cm []bool
	if q.ParentCol >= 0 {
		pcol, pm = g.pcols[col(g.parent, q.ParentCol)], mask(q.ParentSet, sizes[q.ParentCol])
	}
	if q.ChildCol >= 0 {
		ccol, cm = g.ccols[col(g.child, q.ChildCol)], mask(q.ChildSet, sizes[q.ChildCol])
	}
	k := int32(q.K)
	n := 0
	for i := range len(g.start) - 1 {
		lo, hi := g.start[i], g.start[i+1]
		f := int(hi - lo)
		if f < q.FanLo || (q.FanHi >= 0 && f > q.FanHi) || hi-lo < k {
			continue
		}
		if pcol != nil && !pm[pcol[i]] {
			continue
		}
		if ccol == nil {
			n++
			continue
		}
		var hits int32
		for x := lo; x < hi && hits < k; x++ {
			if cm[ccol[x]] {
				hits++
			}
		}
		if hits >= k {
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

// GroupCount answers the group query q on ts (see [GroupQuery]).
func GroupCount(s *spec.Spec, ts *Tables, q GroupQuery) (int, error) {
	g, err := newGroupIndex(ts, q.Parent, q.Child)
	if err != nil {
		return 0, err
	}
	return g.count(q, s.ReleaseSizes()), nil
}
