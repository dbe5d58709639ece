package workload

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
)

// queryFamily is one workload family over the universe of the released
// columns (positions in release order). PMW keeps it accurate and
// Evaluate measures it: both read this one description.
type queryFamily struct {
	name string
	// cols is the marginal the family's queries are the cells of.
	cols []int
	// rng is the range column of a range family (-1 otherwise): cols is
	// then by followed by rng.
	rng int
	// wcols and weights, for a numeric sum: weights[l] ∈ [−1, 1] is the
	// weight of the wcols-cell l, and scale converts a weighted count back
	// to the sum's units.
	wcols   []int
	weights []float64
	scale   float64
	// added marks a 1-way marginal the release added to a listed workload.
	added bool
}

// workload returns the spec's workload as query families. An empty
// workload means every 1-way and 2-way marginal. A listed workload gets,
// after its own families, the 1-way marginal of every released column it
// does not already list as one, unless the spec says one_way: false: a
// released column no query covers would come out near uniform.
//
// A numeric query sum(c) WHERE conditions becomes a weighted family with
// one query, Σ_x F(x)·w(x) with w(x) = 1[x satisfies the conditions]·v(x)/M,
// where v(x) is the representative value of c's bin (the value the
// synthetic file holds, see [synthfile.Decoder.Value]) and M = max(|min|, |max|) of c's
// domain, so every weight lies in [−1, 1] as PMW requires. A condition holds
// on a bin when the bin's representative satisfies it. The summed column
// must be released, or be a release.measures column, whose sums the
// measure's numerical run answers instead (measures.go).
func workload(s *spec.Spec, dec *synthfile.Decoder) ([]queryFamily, error) {
	fams := countingFamilies(s)
	names := layout.ColumnNames(s)
	pos := layout.Positions(s)
	for qi, q := range s.Workload.Numeric {
		if _, released := pos[q.Sum]; !released && slices.Contains(s.Release.Measures, q.Sum) {
			// Answered by the measure's numerical run (see measures.go), not
			// by PMW on the synthetic rows.
			continue
		}
		f, err := numericFamily(s, dec, pos, q)
		if err != nil {
			return nil, fmt.Errorf("workload.numeric[%d]: %w", qi, err)
		}
		f.name = numericName(names, pos, q)
		fams = append(fams, f)
	}
	return fams, nil
}

// numericName names a numeric query's family: sum(c), or sum(c) where
// columns, with released columns by their release names.
func numericName(names []string, pos map[spec.ColumnRef]int, q spec.NumericQuery) string {
	col := func(r spec.ColumnRef) string {
		if i, ok := pos[r]; ok {
			return names[i]
		}
		return r.String()
	}
	name := "sum(" + col(q.Sum) + ")"
	if len(q.Where) > 0 {
		var parts []string
		seen := map[spec.ColumnRef]bool{q.Sum: true}
		for _, c := range q.Where {
			if !seen[c.Column] {
				seen[c.Column] = true
				parts = append(parts, col(c.Column))
			}
		}
		name += " where " + strings.Join(parts, ",")
	}
	return name
}

// countingFamilies returns the marginal and range families of the
// effective workload (everything but the numeric queries), in the order
// [workload] uses: the default 1- and 2-way marginals of an empty
// workload, or the listed marginals, the listed ranges and the added 1-way
// marginals.
func countingFamilies(s *spec.Spec) []queryFamily {
	names := layout.ColumnNames(s)
	pos := layout.Positions(s)
	idx := func(refs []spec.ColumnRef) []int {
		out := make([]int, len(refs))
		for i, r := range refs {
			out[i] = pos[r]
		}
		return out
	}
	label := func(c []int) string {
		parts := make([]string, len(c))
		for i, k := range c {
			parts[i] = names[k]
		}
		return strings.Join(parts, ",")
	}
	var fams []queryFamily
	w := s.Workload
	if w.Empty() {
		for i := range names {
			fams = append(fams, queryFamily{name: "marginal(" + names[i] + ")", cols: []int{i}, rng: -1})
		}
		for i := range names {
			for j := i + 1; j < len(names); j++ {
				fams = append(fams, queryFamily{name: "marginal(" + names[i] + "," + names[j] + ")", cols: []int{i, j}, rng: -1})
			}
		}
		return fams
	}
	oneWay := make([]bool, len(names))
	for _, m := range w.Marginals {
		c := idx(m)
		if len(c) == 1 {
			oneWay[c[0]] = true
		}
		fams = append(fams, queryFamily{name: "marginal(" + label(c) + ")", cols: c, rng: -1})
	}
	for _, r := range w.Ranges {
		by := idx(r.By)
		col := pos[r.Column]
		name := "ranges(" + names[col] + ")"
		if len(by) > 0 {
			name = "ranges(" + names[col] + " by " + label(by) + ")"
		}
		fams = append(fams, queryFamily{name: name, cols: append(by, col), rng: col})
	}
	if !w.NoOneWay {
		for i := range names {
			if !oneWay[i] {
				fams = append(fams, queryFamily{name: "marginal(" + names[i] + ")", cols: []int{i}, rng: -1, added: true})
			}
		}
	}
	return fams
}

// Family describes one query family of the effective workload,
// the one a release keeps accurate: its name, its kind ("marginal",
// "ranges" or "sum") and the released columns it covers (positions in
// release order; a sum covers none: its one query does not pin any
// marginal). Added is true for the 1-way marginals the release adds to a
// listed workload and for the default marginals of an empty one.
type Family struct {
	Name    string
	Kind    string
	Columns []int
	Added   bool
}

// Effective returns the query families a release of s keeps
// accurate (see [workload]), without reading data or building weights.
// It reads only the spec: its output is public.
func Effective(s *spec.Spec) []Family {
	var out []Family
	for _, f := range countingFamilies(s) {
		kind := "marginal"
		if f.rng >= 0 {
			kind = "ranges"
		}
		out = append(out, Family{Name: f.name, Kind: kind, Columns: f.cols, Added: f.added || s.Workload.Empty()})
	}
	names := layout.ColumnNames(s)
	pos := layout.Positions(s)
	for _, q := range s.Workload.Numeric {
		out = append(out, Family{Name: numericName(names, pos, q), Kind: "sum"})
	}
	return out
}

func numericFamily(s *spec.Spec, dec *synthfile.Decoder, pos map[spec.ColumnRef]int, q spec.NumericQuery) (queryFamily, error) {
	sum, ok := pos[q.Sum]
	if !ok {
		return queryFamily{}, fmt.Errorf("%w: sum of %s, which is not released (release it; sums of unreleased columns need the numerical-queries mechanism)", ErrUnsupported, q.Sum)
	}
	col := s.Column(q.Sum)
	m := math.Max(math.Abs(col.Min), math.Abs(col.Max))
	if !(m > 0) || math.IsInf(m, 0) {
		return queryFamily{}, fmt.Errorf("%w: sum of %s: its domain [%g, %g] gives no scale", ErrUnsupported, q.Sum, col.Min, col.Max)
	}
	// wcols: the summed column, then each further column a condition names
	// (a condition on the summed column itself reuses position 0).
	wcols := []int{sum}
	at := make([]int, len(q.Where))
	for i, c := range q.Where {
		p := pos[c.Column]
		at[i] = -1
		for k, w := range wcols {
			if w == p {
				at[i] = k
			}
		}
		if at[i] < 0 {
			at[i] = len(wcols)
			wcols = append(wcols, p)
		}
	}
	size := 1
	for _, c := range wcols {
		size *= int(dec.NumBins(c))
	}
	weights := make([]float64, size)
	bins := make([]int, len(wcols))
	for l := range weights {
		// Decode l in mixed radix over wcols (first most significant).
		x := l
		for k := len(wcols) - 1; k >= 0; k-- {
			n := int(dec.NumBins(wcols[k]))
			bins[k] = x % n
			x /= n
		}
		in := true
		for i, c := range q.Where {
			if !satisfies(dec.Value(wcols[at[i]], bins[at[i]]), c) {
				in = false
				break
			}
		}
		// A NULL of a nullable summed column adds nothing, as in SQL's SUM
		// (and it satisfies no condition: satisfies is false on nil).
		if v := dec.Value(sum, bins[0]); in && v != nil {
			weights[l] = toFloat(v) / m
		}
	}
	return queryFamily{cols: nil, rng: -1, wcols: wcols, weights: weights, scale: m}, nil
}

// satisfies reports whether a bin's representative value meets a condition.
func satisfies(v any, c spec.Condition) bool {
	switch x := v.(type) {
	case string:
		for _, s := range c.Values {
			if s == x {
				return true
			}
		}
		return false
	case bool:
		for _, s := range c.Values {
			if b, err := parseBool(s); err == nil && b == x {
				return true
			}
		}
		return false
	case time.Time:
		return !x.Before(c.DateLo) && !x.After(c.DateHi)
	default:
		f := toFloat(v)
		return f >= c.Lo && f <= c.Hi
	}
}

// ConditionSQL renders a workload condition on the synthetic file's
// column ident (an SQL identifier, quoted) of type c, for DuckDB or
// PostgreSQL: the SQL form of the rule the workload's sums are answered
// with (a condition holds on a row when the row's value, its bin's
// representative, satisfies it).
func ConditionSQL(ident string, c *spec.Column, cond spec.Condition) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch c.Type {
	case spec.Integer, spec.Numeric:
		return ident + " BETWEEN " + num(cond.Lo) + " AND " + num(cond.Hi)
	case spec.Date:
		return ident + " BETWEEN DATE '" + cond.DateLo.Format("2006-01-02") + "' AND DATE '" + cond.DateHi.Format("2006-01-02") + "'"
	case spec.Boolean:
		return ident + " IN (" + strings.Join(cond.Values, ", ") + ")"
	default:
		vals := make([]string, len(cond.Values))
		for i, v := range cond.Values {
			vals[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		}
		return ident + " IN (" + strings.Join(vals, ", ") + ")"
	}
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "t", "1":
		return true, nil
	case "false", "f", "0":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean: %q", s)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// pmwFamilies turns query families into PMW families.
func pmwFamilies(fams []queryFamily) []pmw.Family {
	out := make([]pmw.Family, len(fams))
	for i, f := range fams {
		switch {
		case f.weights != nil:
			out[i] = pmw.Weighted(f.cols, f.wcols, f.weights)
		case f.rng >= 0:
			out[i] = pmw.Range(f.rng, f.cols[:len(f.cols)-1])
		default:
			out[i] = pmw.Marginal(f.cols)
		}
	}
	return out
}

// Families returns the PMW query families of the spec's workload over the
// universe of the released columns; see [workload] for how each kind of
// query is expressed.
func Families(s *spec.Spec) ([]pmw.Family, error) {
	dec, err := synthfile.NewDecoder(layout.ColumnNames(s), s.ReleaseColumns())
	if err != nil {
		return nil, err
	}
	fams, err := workload(s, dec)
	if err != nil {
		return nil, err
	}
	return pmwFamilies(fams), nil
}
