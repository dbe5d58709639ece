package tablestest

import (
	"math/rand/v2"
	"slices"

	"github.com/synth-dp/synth/internal/score"
)

// Clone returns a deep copy of ts (the tree is shared).
func Clone(ts *score.Tables) *score.Tables {
	out := &score.Tables{Tree: ts.Tree}
	for _, e := range ts.Tables {
		c := &score.Entities{Table: e.Table, Cols: slices.Clone(e.Cols), Parent: slices.Clone(e.Parent)}
		for _, r := range e.Rows {
			c.Rows = append(c.Rows, slices.Clone(r))
		}
		out.Tables = append(out.Tables, c)
	}
	return out
}

// ShuffleColumn permutes the released column pos (a release position) of
// table across its rows: the column's own marginal stays, its ties to the
// table's other columns and to the other tables go.
func ShuffleColumn(ts *score.Tables, table string, pos int, rng *rand.Rand) {
	e := ts.Get(table)
	j := slices.Index(e.Cols, pos)
	rng.Shuffle(len(e.Rows), func(a, b int) { e.Rows[a][j], e.Rows[b][j] = e.Rows[b][j], e.Rows[a][j] })
}

// ReassignChildren gives every row of table a parent drawn uniformly at
// random: the tables' marginals stay, the fan-out and the ties between
// parents and children go.
func ReassignChildren(ts *score.Tables, table string, rng *rand.Rand) {
	e := ts.Get(table)
	edge, _ := ts.Tree.ParentEdge(table)
	n := len(ts.Get(edge.Parent).Rows)
	for i := range e.Parent {
		e.Parent[i] = rng.IntN(n)
	}
}
