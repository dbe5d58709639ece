package rangeset

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// ErrNotBox is wrapped by errors about queries that are not range counts
// over one table (a box).
var ErrNotBox = errors.New("rangeset: not a range-count query on one table")

// Set is a parsed set of range-count queries on one table: one box per
// query over the columns the queries mention.
type Set struct {
	// Table is the queried table.
	Table string
	// Columns are the box dimensions, in order of first mention.
	Columns []spec.ColumnRef
	// Queries are the parsed queries.
	Queries []*relational.Query
	// Boxes holds one box per query (a column a query does not mention
	// spans the whole line). Integer, date, categorical and boolean columns
	// are closed integer intervals (dates as days since 1970-01-01,
	// categories as their index in the declared domain); numeric columns
	// keep open and closed ends.
	Boxes []Box

	cols []*spec.Column // the declared column of each dimension
}

// Parse parses the queries with [relational.Parse] and turns each into a
// box. Every query must be SELECT COUNT(*) FROM t [WHERE …] over the same
// table t, no GROUP BY, with a WHERE clause that is a conjunction of
// comparisons with constants (=, <, <=, >, >=) and BETWEEN, on integer,
// numeric and date columns, and = (or IN with one value) on categorical
// and boolean ones; anything else wraps [ErrNotBox] inside a
// [*relational.QueryError].
func Parse(ctx context.Context, p relational.Parser, s *spec.Spec, texts []string) (*Set, error) {
	set := &Set{}
	type constraint struct {
		col int
		iv  Interval
	}
	var all [][]constraint
	for _, text := range texts {
		q, err := relational.Parse(ctx, p, s, text)
		if err != nil {
			return nil, err
		}
		fail := func(format string, args ...any) error {
			return &relational.QueryError{Query: text, Err: fmt.Errorf("%w: "+format, append([]any{ErrNotBox}, args...)...)}
		}
		if q.Agg != relational.Count || len(q.Tables) != 1 || len(q.GroupBy) > 0 {
			return nil, fail("want SELECT COUNT(*) FROM one table, no GROUP BY")
		}
		if set.Table == "" {
			set.Table = q.Tables[0]
		} else if q.Tables[0] != set.Table {
			return nil, fail("table %s; the set queries %s", q.Tables[0], set.Table)
		}
		var cons []constraint
		var walk func(p relational.Pred) error
		add := func(ref spec.ColumnRef, iv Interval) {
			i := slices.Index(set.Columns, ref)
			if i < 0 {
				i = len(set.Columns)
				set.Columns = append(set.Columns, ref)
			}
			cons = append(cons, constraint{i, iv})
		}
		walk = func(p relational.Pred) error {
			switch x := p.(type) {
			case relational.AndPred:
				for _, t := range x.Terms {
					if err := walk(t); err != nil {
						return err
					}
				}
				return nil
			case relational.CmpPred:
				c := s.Column(x.Col)
				v, err := value(c, x.V)
				if err != nil {
					return err
				}
				iv := Full
				switch x.Op {
				case "=":
					iv = Interval{Bound{V: v}, Bound{V: v}}
				case "<":
					iv.Hi = Bound{v, -1}
				case "<=":
					iv.Hi = Bound{V: v}
				case ">":
					iv.Lo = Bound{v, 1}
				case ">=":
					iv.Lo = Bound{V: v}
				default:
					return fmt.Errorf("%s %s is not a range", x.Col, x.Op)
				}
				if !ordered(c) && x.Op != "=" {
					return fmt.Errorf("%s is %s: only = is a range", x.Col, c.Type)
				}
				add(x.Col, discrete(c, iv))
				return nil
			case relational.BetweenPred:
				c := s.Column(x.Col)
				if !ordered(c) {
					return fmt.Errorf("%s is %s: BETWEEN needs an ordered column", x.Col, c.Type)
				}
				lo, err := value(c, x.Lo)
				if err != nil {
					return err
				}
				hi, err := value(c, x.Hi)
				if err != nil {
					return err
				}
				add(x.Col, discrete(c, Interval{Bound{V: lo}, Bound{V: hi}}))
				return nil
			case relational.InPred:
				if len(x.Values) != 1 {
					return fmt.Errorf("%s IN a list of %d values is not a box", x.Col, len(x.Values))
				}
				return walk(relational.CmpPred{Col: x.Col, Op: "=", V: x.Values[0]})
			}
			return fmt.Errorf("%T is not a conjunction of ranges", p)
		}
		if w, ok := q.Where[set.Table]; ok {
			if err := walk(w); err != nil {
				return nil, fail("%v", err)
			}
		}
		set.Queries = append(set.Queries, q)
		all = append(all, cons)
	}
	for _, ref := range set.Columns {
		set.cols = append(set.cols, s.Column(ref))
	}
	for _, cons := range all {
		b := make(Box, len(set.Columns))
		for d := range b {
			b[d] = Full
		}
		for _, c := range cons {
			iv := &b[c.col]
			if c.iv.Lo.Compare(iv.Lo) > 0 {
				iv.Lo = c.iv.Lo
			}
			if c.iv.Hi.Compare(iv.Hi) < 0 {
				iv.Hi = c.iv.Hi
			}
		}
		set.Boxes = append(set.Boxes, b)
	}
	return set, nil
}

// ordered reports whether ranges (<, BETWEEN) make sense on the column.
func ordered(c *spec.Column) bool {
	return c.Type == spec.Integer || c.Type == spec.Numeric || c.Type == spec.Date
}

// discrete turns an interval on an integer-valued axis into the closed
// interval of the integers it holds.
func discrete(c *spec.Column, iv Interval) Interval {
	if c.Type == spec.Numeric {
		return iv
	}
	if !math.IsInf(iv.Lo.V, 0) {
		lo := math.Ceil(iv.Lo.V)
		if iv.Lo.Tick > 0 && lo == iv.Lo.V {
			lo++
		}
		iv.Lo = Bound{V: lo}
	}
	if !math.IsInf(iv.Hi.V, 0) {
		hi := math.Floor(iv.Hi.V)
		if iv.Hi.Tick < 0 && hi == iv.Hi.V {
			hi--
		}
		iv.Hi = Bound{V: hi}
	}
	return iv
}

// value reads a literal as a coordinate of the column's axis.
func value(c *spec.Column, l relational.Lit) (float64, error) {
	text := l.SQL
	switch c.Type {
	case spec.Integer, spec.Numeric:
		// A numeric literal is CAST(x AS <type>) or x.
		if rest, ok := strings.CutPrefix(text, "CAST("); ok {
			text, _, _ = strings.Cut(rest, " AS ")
		}
		return strconv.ParseFloat(strings.TrimSpace(text), 64)
	case spec.Date:
		d, err := time.Parse("2006-01-02", strings.Trim(strings.TrimPrefix(text, "DATE "), "'"))
		if err != nil {
			return 0, err
		}
		return math.Floor(float64(d.Unix()) / 86400), nil
	case spec.Boolean:
		if text == "TRUE" {
			return 1, nil
		}
		return 0, nil
	case spec.Categorical:
		v := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(text, "'"), "'"), "''", "'")
		if i := slices.Index(c.Values, v); i >= 0 {
			return float64(i), nil
		}
		return 0, fmt.Errorf("%q is not in the declared domain of %s", v, c.Name)
	}
	return 0, fmt.Errorf("column %s of type %s is not a range axis", c.Name, c.Type)
}
