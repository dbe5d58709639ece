package score

import (
	"context"
	"fmt"
	"math/bits"
	"slices"

	"github.com/synth-dp/synth/spec"
)

// MarginalTVD is the TVD of one marginal of a table's own rows.
type MarginalTVD struct {
	// Columns are the marginal's columns (output names).
	Columns []string `json:"columns"`
	// TVD is the synthetic table's TVD to the true table; UniformTVD the
	// uniform distribution's (the floor a useless release gets).
	TVD        float64 `json:"tvd"`
	UniformTVD float64 `json:"uniform_tvd"`
}

// TableScore scores one table of a tables release on its own rows.
type TableScore struct {
	Table string `json:"table"`
	// TrueRows and Rows are the true and synthetic tables' row counts.
	TrueRows int `json:"true_rows"`
	Rows     int `json:"rows"`
	// Marginals are every 1- and 2-way marginal of the table's released
	// columns, counted over the table's rows.
	Marginals []MarginalTVD `json:"marginals"`
	// MeanTVD and MaxTVD summarise Marginals (0 without marginals).
	MeanTVD    float64 `json:"mean_tvd"`
	MaxTVD     float64 `json:"max_tvd"`
	MeanUnifTV float64 `json:"mean_uniform_tvd"`
}

// FanOutBin returns the fan-out bin of a parent with n children: 0 for
// none, 1 for one, then 2–3, 4–7, 8–15, …: bin b ≥ 1 holds
// [2^(b−1), 2^b − 1].
func FanOutBin(n int) int {
	if n <= 0 {
		return 0
	}
	return bits.Len(uint(n))
}

// FanOutLabel names fan-out bin b ("0", "1", "2–3", …).
func FanOutLabel(b int) string {
	switch b {
	case 0:
		return "0"
	case 1:
		return "1"
	}
	return fmt.Sprintf("%d–%d", 1<<(b-1), 1<<b-1)
}

// FanOutScore compares the distributions of children per parent on one
// edge, counted over every parent row (parents without children included).
type FanOutScore struct {
	Parent string `json:"parent"`
	Child  string `json:"child"`
	// Bins labels the fan-out bins ([FanOutLabel]), as many as the larger
	// of the two sides needs.
	Bins []string `json:"bins"`
	// True and Synthetic are the shares of parents per bin.
	True      []float64 `json:"true"`
	Synthetic []float64 `json:"synthetic"`
	// TVD is their total-variation distance.
	TVD float64 `json:"tvd"`
	// TrueMean and Mean are the mean numbers of children per parent.
	TrueMean float64 `json:"true_mean"`
	Mean     float64 `json:"mean"`
}

// SiblingScore measures how alike siblings are on one edge and one of
// the child's released columns: the share of pairs of distinct children
// of one parent (unordered, pooled over every parent: a parent with n
// children gives n(n−1)/2 pairs) whose values of the column fall in the
// same bin, in the true and in the synthetic tables. Two orders of one
// customer are alike more often than two random orders; a release that
// assigns children to parents at random, or draws siblings independently
// given the parent, loses that.
type SiblingScore struct {
	Parent string `json:"parent"`
	Child  string `json:"child"`
	// Column is the child's column (output name).
	Column string `json:"column"`
	// True and Synthetic are the shares of sibling pairs that agree (0
	// without pairs); TruePairs and Pairs the numbers of sibling pairs.
	True      float64 `json:"true"`
	Synthetic float64 `json:"synthetic"`
	TruePairs int64   `json:"true_pairs"`
	Pairs     int64   `json:"pairs"`
	// TrueRandom is the share of all pairs of distinct true child rows,
	// siblings or not, that agree: what siblings would score if they were
	// no more alike than random children.
	TrueRandom float64 `json:"true_random"`
}

// siblingAgreement returns, for column j of the child rows rows whose
// parents are parent (indices below parents), the number of pairs of
// distinct siblings and how many of them share column j's bin: per
// parent, Σ_b C(n_b, 2) of C(n, 2), n_b its children in bin b.
func siblingAgreement(rows [][]int, parent []int, parents, j, size int) (agree, pairs int64) {
	counts := make([]int64, parents*size)
	n := make([]int64, parents)
	for k, r := range rows {
		counts[parent[k]*size+r[j]]++
		n[parent[k]]++
	}
	for _, c := range counts {
		agree += c * (c - 1) / 2
	}
	for _, c := range n {
		pairs += c * (c - 1) / 2
	}
	return agree, pairs
}

func share(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// TablesScore is the score of a tables release against the true tables.
// INTERNAL: computed from the private data, never published.
type TablesScore struct {
	Label   string        `json:"label"`
	Tables  []TableScore  `json:"tables"`
	FanOuts []FanOutScore `json:"fan_outs"`
	// Siblings is the sibling agreement of every edge and released child
	// column, edges in tree order.
	Siblings []SiblingScore `json:"siblings"`
	// TrueJoinRows and JoinRows are the row counts of the join of the
	// true and of the synthetic tables ([JoinRows]): the flat file of a
	// tables release holds JoinRows rows when it is the join of its tables.
	TrueJoinRows int64 `json:"true_join_rows"`
	JoinRows     int64 `json:"join_rows"`
	// Groups is the group-query score (nil when not asked for).
	Groups *GroupScore `json:"group_queries,omitempty"`
}

// InternalLabel marks every score of the private data.
const InternalLabel = "INTERNAL: computed from the private data; not differentially private; do not publish"

// fanOuts returns the number of children of every parent row.
func fanOuts(parents int, parent []int) []int {
	n := make([]int, parents)
	for _, p := range parent {
		n[p]++
	}
	return n
}

func fanOutHist(n []int, bins int) []float64 {
	h := make([]float64, bins)
	for _, k := range n {
		h[FanOutBin(k)]++
	}
	if len(n) > 0 {
		for i := range h {
			h[i] /= float64(len(n))
		}
	}
	return h
}

func mean(n []int) float64 {
	if len(n) == 0 {
		return 0
	}
	t := 0
	for _, k := range n {
		t += k
	}
	return float64(t) / float64(len(n))
}

// ScoreTables compares the synthetic tables syn with the true ones (both
// read over the same tree): every 1- and 2-way marginal of each table's
// released columns over its own rows, and the fan-out distribution of
// every edge. names are the released columns' output names, in release
// order. Group queries are scored separately ([ScoreGroups]).
func ScoreTables(s *spec.Spec, truth, syn *Tables, names []string) (*TablesScore, error) {
	if len(truth.Tables) != len(syn.Tables) {
		return nil, fmt.Errorf("score: the true and synthetic tables differ in shape")
	}
	sizes := s.ReleaseSizes()
	out := &TablesScore{Label: InternalLabel, TrueJoinRows: JoinRows(truth), JoinRows: JoinRows(syn)}
	for i, tt := range truth.Tables {
		st := syn.Tables[i]
		if st.Table != tt.Table || !slices.Equal(st.Cols, tt.Cols) {
			return nil, fmt.Errorf("score: table %d is %s in the truth and %s in the synthetic release", i, tt.Table, st.Table)
		}
		ts := TableScore{Table: tt.Table, TrueRows: len(tt.Rows), Rows: len(st.Rows)}
		local := make([]int, len(tt.Cols))
		for j, p := range tt.Cols {
			local[j] = sizes[p]
		}
		tTab, sTab := &Table{Rows: tt.Rows}, &Table{Rows: st.Rows}
		for _, m := range AllOneTwoWay(len(tt.Cols)) {
			p := tTab.Marginal(m, local)
			mt := MarginalTVD{TVD: TVD(p, sTab.Marginal(m, local)), UniformTVD: TVD(p, Uniform(len(p)))}
			for _, j := range m {
				mt.Columns = append(mt.Columns, names[tt.Cols[j]])
			}
			ts.Marginals = append(ts.Marginals, mt)
			ts.MeanTVD += mt.TVD
			ts.MeanUnifTV += mt.UniformTVD
			ts.MaxTVD = max(ts.MaxTVD, mt.TVD)
		}
		if k := len(ts.Marginals); k > 0 {
			ts.MeanTVD /= float64(k)
			ts.MeanUnifTV /= float64(k)
		}
		out.Tables = append(out.Tables, ts)
	}
	for _, e := range truth.Tree.Edges {
		tp, tc := truth.Get(e.Parent), truth.Get(e.Child)
		sp, sc := syn.Get(e.Parent), syn.Get(e.Child)
		tn, sn := fanOuts(len(tp.Rows), tc.Parent), fanOuts(len(sp.Rows), sc.Parent)
		bins := 1
		for _, k := range append(slices.Clone(tn), sn...) {
			bins = max(bins, FanOutBin(k)+1)
		}
		f := FanOutScore{Parent: e.Parent, Child: e.Child, True: fanOutHist(tn, bins), Synthetic: fanOutHist(sn, bins), TrueMean: mean(tn), Mean: mean(sn)}
		for b := range bins {
			f.Bins = append(f.Bins, FanOutLabel(b))
		}
		f.TVD = TVD(f.True, f.Synthetic)
		out.FanOuts = append(out.FanOuts, f)
		for j, p := range tc.Cols {
			tAgree, tPairs := siblingAgreement(tc.Rows, tc.Parent, len(tp.Rows), j, sizes[p])
			sAgree, sPairs := siblingAgreement(sc.Rows, sc.Parent, len(sp.Rows), j, sizes[p])
			// All pairs of true child rows: one parent holding them all.
			rAgree, rPairs := siblingAgreement(tc.Rows, make([]int, len(tc.Rows)), 1, j, sizes[p])
			out.Siblings = append(out.Siblings, SiblingScore{Parent: e.Parent, Child: e.Child, Column: names[p],
				True: share(tAgree, tPairs), Synthetic: share(sAgree, sPairs), TruePairs: tPairs, Pairs: sPairs, TrueRandom: share(rAgree, rPairs)})
		}
	}
	return out, nil
}

// EvaluateTables scores the tables release in the folder dir against the
// true data of s: [ScoreTables] on [TrueTables] and [SyntheticTables],
// with the protocol's [DefaultGroupQueries] group queries drawn by
// [GroupQueries] from [DefaultGroupSeed]. names are the released columns'
// output names, in release order. INTERNAL: it reads the private data.
func EvaluateTables(ctx context.Context, s *spec.Spec, dir string, names []string) (*TablesScore, error) {
	tr, err := OwnershipTree(s)
	if err != nil {
		return nil, err
	}
	truth, err := TrueTables(ctx, s, tr)
	if err != nil {
		return nil, err
	}
	syn, err := SyntheticTables(ctx, s, tr, dir, names)
	if err != nil {
		return nil, err
	}
	out, err := ScoreTables(s, truth, syn, names)
	if err != nil {
		return nil, err
	}
	out.Groups, err = ScoreGroups(s, truth, syn, GroupQueries(s, tr, DefaultGroupQueries, DefaultGroupSeed), DefaultGroupSeed)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// JoinRows returns the number of rows of the join of the tables ts along
// their tree: a row of a table joins the product, over its child tables,
// of its children's join rows summed (a leaf's row counts 1; a row
// without children in a child table joins nothing), summed over the
// unit's rows. A tables release whose synthetic.parquet is the join of
// its tables has exactly this many flat rows.
func JoinRows(ts *Tables) int64 {
	tr := ts.Tree
	per := map[string][]int64{}
	for i := len(tr.Tables) - 1; i >= 0; i-- {
		t := tr.Tables[i]
		e := ts.Get(t)
		w := make([]int64, len(e.Rows))
		for j := range w {
			w[j] = 1
		}
		for _, edge := range tr.Edges {
			if edge.Parent != t {
				continue
			}
			sum := make([]int64, len(e.Rows))
			for k, p := range ts.Get(edge.Child).Parent {
				sum[p] += per[edge.Child][k]
			}
			for j := range w {
				w[j] *= sum[j]
			}
		}
		per[t] = w
	}
	var n int64
	for _, x := range per[tr.Unit] {
		n += x
	}
	return n
}
