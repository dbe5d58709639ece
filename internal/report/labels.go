package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/synth-dp/synth/spec"
)

// BinLabels returns the label of every bin of every released column of s,
// in release order: a categorical column's values, false and true for a
// boolean, an integer bin's integers ("18" or "18–22"), a numeric bin's
// interval ("[0, 2.5)"), a date bin's first day, month ("2024-03") or year,
// and [NullLabel] for the NULL cell of a nullable column (its last). It
// reads the spec only: the labels are public.
func BinLabels(s *spec.Spec) [][]string {
	cols := s.ReleaseColumns()
	out := make([][]string, len(cols))
	for j, c := range cols {
		out[j] = columnLabels(c)
	}
	return out
}

// NullLabel is the label of a nullable column's NULL cell.
const NullLabel = "NULL"

func columnLabels(c *spec.Column) []string {
	n := c.ValueSize()
	labels := make([]string, n, c.Size())
	switch c.Type {
	case spec.Categorical:
		copy(labels, c.Values)
	case spec.Boolean:
		labels[0], labels[1] = "false", "true"
	case spec.Integer:
		e := c.Edges()
		for i := range labels {
			lo := math.Ceil(e[i])
			hi := math.Ceil(e[i+1]) - 1
			if i == n-1 {
				hi = math.Min(math.Floor(e[i+1]), c.Max)
			}
			if hi <= lo {
				labels[i] = strconv.FormatFloat(lo, 'f', -1, 64)
			} else {
				labels[i] = strconv.FormatFloat(lo, 'f', -1, 64) + "–" + strconv.FormatFloat(hi, 'f', -1, 64)
			}
		}
	case spec.Numeric:
		e := c.Edges()
		for i := range labels {
			closing := ")"
			if i == n-1 {
				closing = "]"
			}
			labels[i] = fmt.Sprintf("[%g, %g%s", e[i], e[i+1], closing)
		}
	case spec.Date:
		layout := "2006-01-02"
		switch c.Granularity {
		case spec.Month:
			layout = "2006-01"
		case spec.Year:
			layout = "2006"
		}
		for i := range labels {
			labels[i] = c.DateBinStart(i).Format(layout)
		}
	default:
		for i := range labels {
			labels[i] = strconv.Itoa(i)
		}
	}
	if c.Nullable {
		labels = append(labels, NullLabel)
	}
	return labels
}
