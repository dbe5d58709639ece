package multi

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// Coordinates lists the d query coordinates of a list of queries: one per
// group of each query's declared GROUP BY domain ([relational.Groups]), in
// query order. It depends on the queries and the spec only.
func Coordinates(s *spec.Spec, queries []*relational.Query) []Coordinate {
	var out []Coordinate
	for qi, q := range queries {
		for _, g := range relational.Groups(s, q) {
			out = append(out, Coordinate{Query: qi, Group: g})
		}
	}
	return out
}

// Coordinate is one of the d answers: a query and one group of it.
type Coordinate struct {
	// Query indexes the query list.
	Query int
	// Group is the group (nil without GROUP BY).
	Group relational.Group
}

// Contributions computes the per-unit contribution vectors S_i(I) of the
// queries in SQL through db: one aggregate query per query, grouped by the
// unit's key and the GROUP BY columns, summing ψ in whole grid steps of g
// (each term rounded to the grid in SQL and summed as an integer, as R2T
// does: [relational.Quantum]). Coordinates follow [Coordinates]; rows whose
// group value lies outside the declared domain belong to no coordinate.
// Unit ids are dense from 0 over the units that contribute; units without
// contributions have S_i = 0 and are not listed.
//
// Every query must reference the unit relation through the spec's foreign
// keys, joined along that path (ownership as in [relational.Answer]), and
// reference no other unit: that is the self-join-free case of Alg. 1. SUM
// needs a non-negative expression on the declared domains.
func Contributions(ctx context.Context, db relational.DB, s *spec.Spec, queries []*relational.Query, unit string, g float64) ([]Entry, int, error) {
	coords := Coordinates(s, queries)
	index := map[string]int{}
	for i, c := range coords {
		index[coordKey(c.Query, groupValues(c.Group))] = i
	}
	ids := map[string]int{}
	var out []Entry
	for qi, q := range queries {
		col, err := UnitColumn(s, q, unit)
		if err != nil {
			return nil, 0, err
		}
		// The coordinate of each group's texts as they come, memoised: a
		// query has few groups and its rows many units (the key built
		// per row was a good part of `answer --multi`'s own CPU).
		memo := map[string]int{}
		var raw []byte
		err = groupedSums(ctx, db, s, q, []spec.ColumnRef{col}, g, func(keys []sql.NullString, psi float64) error {
			raw = raw[:0] // each text as valid flag, length, bytes: unambiguous
			for _, v := range keys[1:] {
				if v.Valid {
					raw = append(raw, 1)
				} else {
					raw = append(raw, 0)
				}
				raw = binary.AppendUvarint(raw, uint64(len(v.String)))
				raw = append(raw, v.String...)
			}
			k, seen := memo[string(raw)]
			if !seen {
				vals := make([]string, len(q.GroupBy))
				for i := range vals {
					vals[i] = normGroup(s.Column(q.GroupBy[i]), keys[i+1])
				}
				var ok bool
				if k, ok = index[coordKey(qi, vals)]; !ok {
					k = -1
				}
				memo[string(raw)] = k
			}
			if k < 0 || psi == 0 {
				return nil
			}
			id, ok := ids[keys[0].String]
			if !ok {
				id = len(ids)
				ids[keys[0].String] = id
			}
			out = append(out, Entry{Unit: id, Coord: k, Psi: psi})
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("multi: contributions of %q: %w", q.Text, err)
		}
	}
	return out, len(coords), nil
}

// groupedSums runs one aggregate of q's join grouped by keyCols (as text)
// and q's GROUP BY columns (as text), summing every join result's term —
// 1, or SUM's expression in whole grid steps g — and calls fn per group
// with the key and group texts (keyCols first) and the sum ψ. The
// contributions of Alg. 1 (one unit column) and the join groups of Alg. 2
// (every used unit's column) are both this query.
func groupedSums(ctx context.Context, db relational.DB, s *spec.Spec, q *relational.Query, keyCols []spec.ColumnRef, g float64,
	fn func(keys []sql.NullString, psi float64) error) error {
	kc, err := relational.QueryKeys(ctx, db, s, q, keyCols...)
	if err != nil {
		return err
	}
	r := newRenderer(kc, q)
	var sel []string
	// Keys as the engine compares them (kc.Group: the text, or a stored
	// integer, whose Go text is the same); the GROUP BY columns' labels
	// through the text cast, which prints their values as normGroup reads
	// them — except a categorical column's, which is grouped on its cell
	// (engine.BinColumn: the index of its category in the declared values,
	// as every engine table holds it) and named by its category below:
	// the same groups, and an integer hashes faster than a label.
	for _, c := range keyCols {
		sel = append(sel, kc.Group(c, r.col(c)))
	}
	labels := make([][]string, len(q.GroupBy))
	for i, c := range q.GroupBy {
		if col := s.Column(c); col != nil && col.Type == spec.Categorical {
			labels[i] = col.Values
			sel = append(sel, r.col(spec.ColumnRef{Table: c.Table, Column: engine.BinColumn(c.Column)}))
			continue
		}
		sel = append(sel, db.KeyText(r.col(c)))
	}
	term := "1"
	if q.Agg == relational.Sum {
		term = "CAST(round(CAST(" + relational.ExprSQL(q.Expr, r.col) + " AS DOUBLE PRECISION) / " + floatLit(g) + ") AS BIGINT)"
	}
	text := "SELECT " + strings.Join(sel, ", ") + ", CAST(SUM(" + term + ") AS DOUBLE PRECISION)" + r.fromWhere(s) +
		" GROUP BY " + strings.Join(seq(len(sel)), ", ")
	keys := make([]sql.NullString, len(sel))
	dest := make([]any, len(sel)+1)
	for i := range keys {
		dest[i] = &keys[i]
	}
	var psi float64
	dest[len(sel)] = &psi
	return db.Aggregate(ctx, text, nil, func(rows *sql.Rows) error {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		for i, vals := range labels {
			if v := &keys[len(keyCols)+i]; vals != nil && v.Valid {
				// A cell outside the declared values stays a number, which
				// names no group (no engine stores one).
				if n, err := strconv.Atoi(v.String); err == nil && n >= 0 && n < len(vals) {
					v.String = vals[n]
				} else if err == nil && n == len(vals) {
					// The NULL cell of a nullable column (spec.Column.NullCell):
					// the group of NULL, not a category's.
					v.Valid = false
				}
			}
		}
		return fn(keys, psi)
	})
}

// normGroup renders a group value read from SQL as [relational.GroupValue]
// writes it.
func normGroup(c *spec.Column, v sql.NullString) string {
	if !v.Valid {
		return "\x00null"
	}
	if c.Type == spec.Integer {
		if f, err := strconv.ParseFloat(v.String, 64); err == nil {
			return strconv.FormatInt(int64(f), 10)
		}
	}
	if c.Type == spec.Boolean {
		return strings.ToLower(v.String)
	}
	return v.String
}

func groupValues(g relational.Group) []string {
	out := make([]string, len(g))
	for i, v := range g {
		out[i] = v.Value
	}
	return out
}

func coordKey(q int, vals []string) string {
	return strconv.Itoa(q) + "\x00" + strings.Join(vals, "\x00")
}

func seq(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

// renderer writes a query's join as SQL over the loaded tables (the same
// SQL relational's views compute: one alias per table, the join
// equalities, each table's selection).
type renderer struct {
	k relational.KeyTexter // how keys are compared
	q *relational.Query
}

func newRenderer(k relational.KeyTexter, q *relational.Query) renderer {
	return renderer{k: k, q: q}
}

func (r renderer) col(c spec.ColumnRef) string {
	return "t" + strconv.Itoa(slices.Index(r.q.Tables, c.Table)) + "." + ident(c.Column)
}

func (r renderer) fromWhere(s *spec.Spec) string {
	from := make([]string, len(r.q.Tables))
	for i, t := range r.q.Tables {
		from[i] = ident(t) + " AS t" + strconv.Itoa(i)
	}
	// Joins and selections are rendered by relational, keys compared as
	// text exactly as the engine's statistics and relational's own
	// mechanisms compare them: raw key columns let the SQL engine cast
	// '07' to 7, so that one unit's deletion changed several units'
	// vectors (and failed on PostgreSQL: bigint = text).
	var conds []string
	for _, j := range r.q.Joins {
		conds = append(conds, relational.JoinSQL(r.k, s, j, r.col))
	}
	for _, t := range r.q.Tables {
		if p, ok := r.q.Where[t]; ok {
			conds = append(conds, relational.PredSQL(r.k, s, p, r.col))
		}
	}
	out := " FROM " + strings.Join(from, ", ")
	if len(conds) > 0 {
		out += " WHERE " + strings.Join(conds, " AND ")
	}
	return out
}

func floatLit(f float64) string {
	return "CAST(" + strconv.FormatFloat(f, 'g', -1, 64) + " AS DOUBLE PRECISION)"
}

func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// SumBound returns the public bound B ≥ |ψ| of one join result of q and
// checks that ψ ≥ 0 on the declared domains.
func SumBound(s *spec.Spec, q *relational.Query) (float64, error) {
	lo, hi := q.SumBound(s)
	b := math.Max(math.Abs(lo), math.Abs(hi))
	if !(b > 0) || math.IsInf(b, 0) {
		return 0, invalid("query %q: the summed expression is bounded by %v on the declared domains; need a finite bound > 0", q.Text, b)
	}
	if lo < 0 {
		return 0, invalid("query %q: user-level DP needs a non-negative summand; the declared domains allow %v", q.Text, lo)
	}
	return b, nil
}
