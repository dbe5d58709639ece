package release

import (
	"strings"

	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

// ExampleSQL returns two queries a reader of the file at path may run as
// they are in DuckDB: a count (the rows per value of the first column of
// the workload's first marginal, else of the first released column) and a
// sum (of the first measure under the conditions of a workload.numeric
// query on it, else over every row; without measures, of a workload sum's
// or the first integer or numeric released column). sumSQL is empty when
// the file has nothing to sum. It reads the spec only.
//
// A condition in the file is a condition on the bins' representative
// values, the semantics the workload's sums are answered with, so the sum
// query returns the sum of the DP answers of the cells it covers (see the
// package doc, "Measures").
func ExampleSQL(s *spec.Spec, path string) (countSQL, sumSQL string) {
	names := layout.ColumnNames(s)
	pos := layout.Positions(s)
	from := " FROM '" + strings.ReplaceAll(path, "'", "''") + "'"
	col := names[0]
	if len(s.Workload.Marginals) > 0 && len(s.Workload.Marginals[0]) > 0 {
		col = names[pos[s.Workload.Marginals[0][0]]]
	}
	countSQL = "SELECT " + quoteIdent(col) + ", COUNT(*) AS n" + from + " GROUP BY 1 ORDER BY 1"

	sumOf := func(name string, q *spec.NumericQuery) string {
		sql := "SELECT SUM(" + quoteIdent(name) + ")" + from
		if q != nil && len(q.Where) > 0 {
			var conds []string
			for _, c := range q.Where {
				conds = append(conds, workload.ConditionSQL(quoteIdent(names[pos[c.Column]]), s.Column(c.Column), c))
			}
			sql += " WHERE " + strings.Join(conds, " AND ")
		}
		return sql
	}
	if len(s.Release.Measures) > 0 {
		mnames, err := measureNames(s, names)
		if err != nil {
			return countSQL, ""
		}
		for _, q := range s.Workload.Numeric {
			for i, m := range s.Release.Measures {
				if q.Sum == m {
					return countSQL, sumOf(mnames[i], &q)
				}
			}
		}
		return countSQL, sumOf(mnames[0], nil)
	}
	for _, q := range s.Workload.Numeric {
		if p, ok := pos[q.Sum]; ok {
			return countSQL, sumOf(names[p], &q)
		}
	}
	for i, c := range s.ReleaseColumns() {
		if c.Type == spec.Integer || c.Type == spec.Numeric {
			return countSQL, sumOf(names[i], nil)
		}
	}
	return countSQL, ""
}
