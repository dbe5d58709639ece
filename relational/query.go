package relational

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/synth-dp/synth/spec"
)

// Agg is the aggregate of a query.
type Agg int

// The aggregates of the query model.
const (
	// Count is COUNT(*): the number of join results.
	Count Agg = iota
	// Sum is SUM(expr): the sum of an arithmetic expression over the join
	// results.
	Sum
)

// Query is one parsed query: an aggregate over the natural join of spec
// tables, with per-table selections and GROUP BY columns whose groups come
// from their declared domains.
type Query struct {
	// Text is the query as written.
	Text string
	// Agg is COUNT(*) or SUM(expr).
	Agg Agg
	// Expr is the summed expression (nil for Count).
	Expr Expr
	// Tables are the joined tables, each at most once (no self-joins).
	Tables []string
	// Joins are the join equalities between columns of different tables.
	Joins []spec.JoinEq
	// Where maps a table to its selection (absent: every row).
	Where map[string]Pred
	// GroupBy lists the grouping columns.
	GroupBy []spec.ColumnRef
}

// Expr is an arithmetic expression over columns and numeric constants.
type Expr interface {
	// sql renders the expression; col renders a column.
	sql(col func(spec.ColumnRef) string) string
	// bounds returns an interval containing every value of the expression
	// on the declared domains.
	bounds(s *spec.Spec) (lo, hi float64)
	cols(add func(spec.ColumnRef))
}

// ColExpr is a column.
type ColExpr struct{ Ref spec.ColumnRef }

// ConstExpr is a numeric constant.
type ConstExpr struct{ V float64 }

// BinExpr is L Op R with Op one of + - * /; division by a constant only.
type BinExpr struct {
	Op   byte
	L, R Expr
}

func (c ColExpr) sql(col func(spec.ColumnRef) string) string {
	// Every column is a double before the arithmetic: an integer product
	// or sum would overflow BIGINT on some data only (a data-dependent
	// error after the budget is charged).
	return "CAST(" + col(c.Ref) + " AS DOUBLE PRECISION)"
}
func (c ColExpr) bounds(s *spec.Spec) (float64, float64) {
	k := s.Column(c.Ref)
	return k.Min, k.Max
}
func (c ColExpr) cols(add func(spec.ColumnRef)) { add(c.Ref) }

func (c ConstExpr) sql(func(spec.ColumnRef) string) string { return floatLit(c.V) }
func (c ConstExpr) bounds(*spec.Spec) (float64, float64)   { return c.V, c.V }
func (c ConstExpr) cols(func(spec.ColumnRef))              {}

func (b BinExpr) sql(col func(spec.ColumnRef) string) string {
	return "(" + b.L.sql(col) + " " + string(b.Op) + " " + b.R.sql(col) + ")"
}
func (b BinExpr) cols(add func(spec.ColumnRef)) { b.L.cols(add); b.R.cols(add) }
func (b BinExpr) bounds(s *spec.Spec) (float64, float64) {
	a1, a2 := b.L.bounds(s)
	c1, c2 := b.R.bounds(s)
	switch b.Op {
	case '+':
		return a1 + c1, a2 + c2
	case '-':
		return a1 - c2, a2 - c1
	case '*':
		p := []float64{a1 * c1, a1 * c2, a2 * c1, a2 * c2}
		return slices.Min(p), slices.Max(p)
	default: // '/' by a non-zero constant c1 == c2
		p := []float64{a1 / c1, a2 / c1}
		return slices.Min(p), slices.Max(p)
	}
}

// floatLit renders a finite float as a DOUBLE PRECISION literal (the name both DuckDB and PostgreSQL accept).
func floatLit(f float64) string {
	return "CAST(" + strconv.FormatFloat(f, 'g', -1, 64) + " AS DOUBLE PRECISION)"
}

// Pred is a selection predicate over the columns of one table.
type Pred interface {
	sql(col func(spec.ColumnRef) string) string
}

// AndPred is a conjunction.
type AndPred struct{ Terms []Pred }

// OrPred is a disjunction.
type OrPred struct{ Terms []Pred }

// NotPred is a negation.
type NotPred struct{ P Pred }

// CmpPred is Col Op Value with Op one of = <> < <= > >=.
type CmpPred struct {
	Col spec.ColumnRef
	Op  string
	V   Lit
}

// ColCmpPred is L Op R for two columns of one table of the same type.
type ColCmpPred struct {
	L  spec.ColumnRef
	Op string
	R  spec.ColumnRef
}

func (p ColCmpPred) sql(col func(spec.ColumnRef) string) string {
	return "(" + col(p.L) + " " + p.Op + " " + col(p.R) + ")"
}

// BetweenPred is Col BETWEEN Lo AND Hi (inclusive).
type BetweenPred struct {
	Col    spec.ColumnRef
	Lo, Hi Lit
}

// InPred is Col IN (Values...).
type InPred struct {
	Col    spec.ColumnRef
	Values []Lit
}

// Lit is a literal already rendered as SQL of the column's type.
type Lit struct{ SQL string }

func joinPreds(ps []Pred, op string, col func(spec.ColumnRef) string) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.sql(col)
	}
	return "(" + strings.Join(s, " "+op+" ") + ")"
}

func (p AndPred) sql(col func(spec.ColumnRef) string) string { return joinPreds(p.Terms, "AND", col) }
func (p OrPred) sql(col func(spec.ColumnRef) string) string  { return joinPreds(p.Terms, "OR", col) }
func (p NotPred) sql(col func(spec.ColumnRef) string) string { return "(NOT " + p.P.sql(col) + ")" }
func (p CmpPred) sql(col func(spec.ColumnRef) string) string {
	return "(" + col(p.Col) + " " + p.Op + " " + p.V.SQL + ")"
}
func (p BetweenPred) sql(col func(spec.ColumnRef) string) string {
	return "(" + col(p.Col) + " BETWEEN " + p.Lo.SQL + " AND " + p.Hi.SQL + ")"
}
func (p InPred) sql(col func(spec.ColumnRef) string) string {
	v := make([]string, len(p.Values))
	for i, l := range p.Values {
		v[i] = l.SQL
	}
	return "(" + col(p.Col) + " IN (" + strings.Join(v, ", ") + "))"
}

// Parser turns SQL text into the DuckDB parse tree in JSON
// (json_serialize_sql); *engine.Engine satisfies it.
type Parser interface {
	SerializeSQL(ctx context.Context, q string) (string, error)
}

// node is a generic JSON node of DuckDB's serialised parse tree.
type node map[string]any

func (n node) str(k string) string {
	s, _ := n[k].(string)
	return s
}

func (n node) child(k string) node {
	m, _ := n[k].(map[string]any)
	return node(m)
}

func (n node) list(k string) []node {
	a, _ := n[k].([]any)
	out := make([]node, 0, len(a))
	for _, x := range a {
		m, _ := x.(map[string]any)
		out = append(out, node(m))
	}
	return out
}

// Parse parses one query with DuckDB's parser and checks it against the
// spec s. Errors are *QueryError wrapping [ErrUnsupported] (a construct
// outside the model, named) or [ErrInvalid].
func Parse(ctx context.Context, p Parser, s *spec.Spec, text string) (*Query, error) {
	q, err := parse(ctx, p, s, text)
	if err != nil {
		return nil, &QueryError{Query: text, Err: err}
	}
	return q, nil
}

func parse(ctx context.Context, p Parser, s *spec.Spec, text string) (*Query, error) {
	raw, err := p.SerializeSQL(ctx, text)
	if err != nil {
		return nil, err
	}
	var top struct {
		Error      bool   `json:"error"`
		ErrMessage string `json:"error_message"`
		Statements []node `json:"statements"`
	}
	if err := json.Unmarshal([]byte(raw), &top); err != nil {
		return nil, fmt.Errorf("relational: parse tree: %w", err)
	}
	if top.Error {
		return nil, invalid("syntax: %s", top.ErrMessage)
	}
	if len(top.Statements) != 1 {
		return nil, unsupported("%d statements (want one SELECT)", len(top.Statements))
	}
	n := top.Statements[0].child("node")
	if t := n.str("type"); t != "SELECT_NODE" {
		return nil, unsupported("%s (only a plain SELECT with one aggregate)", strings.TrimSuffix(t, "_NODE"))
	}
	if len(n.list("modifiers")) > 0 {
		return nil, unsupported("%s (ORDER BY, LIMIT and DISTINCT are not part of the query model)", n.list("modifiers")[0].str("type"))
	}
	if cte := n.child("cte_map"); len(cte.list("map")) > 0 {
		return nil, unsupported("WITH (common table expressions)")
	}
	for _, k := range []string{"having", "qualify", "sample"} {
		if n[k] != nil {
			return nil, unsupported("%s", strings.ToUpper(k))
		}
	}
	if n.str("aggregate_handling") == "FORCE_AGGREGATES" {
		return nil, unsupported("GROUP BY ALL (name the grouping columns)")
	}
	b := &builder{s: s, alias: map[string]string{}, q: &Query{Text: text, Where: map[string]Pred{}}}
	var conds []node
	if err := b.from(n.child("from_table"), &conds); err != nil {
		return nil, err
	}
	if w := n.child("where_clause"); w != nil {
		conds = append(conds, w)
	}
	for _, c := range conds {
		if err := b.where(c); err != nil {
			return nil, err
		}
	}
	for _, g := range n.list("group_expressions") {
		if g.str("class") != "COLUMN_REF" {
			return nil, unsupported("GROUP BY %s (only columns)", exprName(g))
		}
		ref, err := b.column(g)
		if err != nil {
			return nil, err
		}
		c := s.Column(ref)
		if !groupable(c) {
			return nil, invalid("GROUP BY %s: a %s column; groups come from a declared domain, so only categorical, boolean and integer columns without bins can be grouped", ref, c.Type)
		}
		if slices.Contains(b.q.GroupBy, ref) {
			return nil, invalid("GROUP BY %s twice", ref)
		}
		b.q.GroupBy = append(b.q.GroupBy, ref)
	}
	if err := b.selectList(n.list("select_list")); err != nil {
		return nil, err
	}
	if err := b.connected(); err != nil {
		return nil, err
	}
	return b.q, nil
}

// groupable reports whether a column's declared domain lists its values.
func groupable(c *spec.Column) bool {
	switch c.Type {
	case spec.Categorical, spec.Boolean:
		return true
	case spec.Integer:
		return c.Bins == 0 && len(c.BinEdges) == 0 && c.Max-c.Min < 10000
	}
	return false
}

type builder struct {
	s     *spec.Spec
	q     *Query
	alias map[string]string // alias or name -> table
}

func (b *builder) from(n node, conds *[]node) error {
	if n == nil {
		return unsupported("SELECT without FROM")
	}
	switch n.str("type") {
	case "BASE_TABLE":
		name := n.str("table_name")
		if n.str("schema_name") != "" || n.str("catalog_name") != "" {
			return unsupported("qualified table name %s.%s", n.str("schema_name"), name)
		}
		t := b.s.Table(name)
		if t == nil {
			return invalid("FROM %s: not a table of the spec", name)
		}
		if slices.Contains(b.q.Tables, name) {
			return unsupported("self-join: table %s appears twice", name)
		}
		b.q.Tables = append(b.q.Tables, name)
		a := n.str("alias")
		if a == "" {
			a = name
		}
		if _, dup := b.alias[a]; dup {
			return invalid("alias %s used twice", a)
		}
		b.alias[a] = name
		return nil
	case "JOIN":
		if jt := n.str("join_type"); jt != "INNER" {
			return unsupported("%s JOIN (only inner joins)", jt)
		}
		switch rt := n.str("ref_type"); rt {
		case "REGULAR", "CROSS":
		default:
			return unsupported("%s JOIN", rt)
		}
		if u, _ := n["using_columns"].([]any); len(u) > 0 {
			return unsupported("JOIN … USING (write the equality in ON)")
		}
		if err := b.from(n.child("left"), conds); err != nil {
			return err
		}
		if err := b.from(n.child("right"), conds); err != nil {
			return err
		}
		if c := n.child("condition"); c != nil {
			*conds = append(*conds, c)
		}
		return nil
	case "SUBQUERY":
		return unsupported("subquery in FROM")
	default:
		return unsupported("FROM %s", strings.ToLower(n.str("type")))
	}
}

// column resolves a COLUMN_REF to a declared column of a FROM table.
func (b *builder) column(n node) (spec.ColumnRef, error) {
	var names []string
	for _, x := range n["column_names"].([]any) {
		names = append(names, x.(string))
	}
	switch len(names) {
	case 1:
		var found []spec.ColumnRef
		for _, t := range b.q.Tables {
			if b.s.Table(t).Column(names[0]) != nil {
				found = append(found, spec.ColumnRef{Table: t, Column: names[0]})
			}
		}
		switch len(found) {
		case 0:
			return spec.ColumnRef{}, invalid("column %s: not a declared column of %s", names[0], strings.Join(b.q.Tables, ", "))
		case 1:
			return found[0], nil
		}
		return spec.ColumnRef{}, invalid("column %s is ambiguous (in %s and %s)", names[0], found[0].Table, found[1].Table)
	case 2:
		t, ok := b.alias[names[0]]
		if !ok {
			return spec.ColumnRef{}, invalid("column %s.%s: no table or alias %s in FROM", names[0], names[1], names[0])
		}
		if b.s.Table(t).Column(names[1]) == nil {
			return spec.ColumnRef{}, invalid("column %s.%s: not a declared column of %s", names[0], names[1], t)
		}
		return spec.ColumnRef{Table: t, Column: names[1]}, nil
	}
	return spec.ColumnRef{}, unsupported("column reference %s", strings.Join(names, "."))
}

// exprName names an expression node for an error message.
func exprName(n node) string {
	switch n.str("class") {
	case "FUNCTION":
		switch f := n.str("function_name"); f {
		case "~~":
			return "LIKE"
		case "!~~":
			return "NOT LIKE"
		case "~~*", "!~~*":
			return "ILIKE"
		default:
			return "function " + f
		}
	case "SUBQUERY":
		return "subquery"
	case "WINDOW":
		return "window function " + n.str("function_name")
	case "CASE":
		return "CASE"
	case "CAST":
		return "CAST"
	}
	return strings.ToLower(n.str("type"))
}

func (b *builder) where(n node) error {
	if n.str("type") == "CONJUNCTION_AND" {
		for _, c := range n.list("children") {
			if err := b.where(c); err != nil {
				return err
			}
		}
		return nil
	}
	if n.str("type") == "COMPARE_EQUAL" && n.child("left").str("class") == "COLUMN_REF" && n.child("right").str("class") == "COLUMN_REF" {
		l, err := b.column(n.child("left"))
		if err != nil {
			return err
		}
		r, err := b.column(n.child("right"))
		if err != nil {
			return err
		}
		if l.Table != r.Table {
			b.q.Joins = append(b.q.Joins, spec.JoinEq{Left: l, Right: r})
			return nil
		}
	}
	p, tables, err := b.pred(n)
	if err != nil {
		return err
	}
	if len(tables) != 1 {
		return unsupported("predicate over %s: a selection must use the columns of one table (besides join equalities)", strings.Join(tables, ", "))
	}
	t := tables[0]
	if old, ok := b.q.Where[t]; ok {
		p = AndPred{Terms: []Pred{old, p}}
	}
	b.q.Where[t] = p
	return nil
}

// pred converts a predicate node; tables lists the tables it reads.
func (b *builder) pred(n node) (Pred, []string, error) {
	var tables []string
	add := func(ts ...string) {
		for _, t := range ts {
			if !slices.Contains(tables, t) {
				tables = append(tables, t)
			}
		}
	}
	switch n.str("type") {
	case "CONJUNCTION_AND", "CONJUNCTION_OR", "OPERATOR_NOT":
		var terms []Pred
		for _, c := range n.list("children") {
			p, ts, err := b.pred(c)
			if err != nil {
				return nil, nil, err
			}
			add(ts...)
			terms = append(terms, p)
		}
		switch n.str("type") {
		case "CONJUNCTION_AND":
			return AndPred{terms}, tables, nil
		case "CONJUNCTION_OR":
			return OrPred{terms}, tables, nil
		}
		if len(terms) != 1 {
			return nil, nil, unsupported("NOT with %d operands", len(terms))
		}
		return NotPred{terms[0]}, tables, nil
	case "COMPARE_EQUAL", "COMPARE_NOTEQUAL", "COMPARE_LESSTHAN", "COMPARE_GREATERTHAN", "COMPARE_LESSTHANOREQUALTO", "COMPARE_GREATERTHANOREQUALTO":
		op := map[string]string{"COMPARE_EQUAL": "=", "COMPARE_NOTEQUAL": "<>", "COMPARE_LESSTHAN": "<", "COMPARE_GREATERTHAN": ">",
			"COMPARE_LESSTHANOREQUALTO": "<=", "COMPARE_GREATERTHANOREQUALTO": ">="}[n.str("type")]
		l, r := n.child("left"), n.child("right")
		if l.str("class") != "COLUMN_REF" && r.str("class") == "COLUMN_REF" {
			l, r = r, l
			op = map[string]string{"=": "=", "<>": "<>", "<": ">", ">": "<", "<=": ">=", ">=": "<="}[op]
		}
		if l.str("class") != "COLUMN_REF" {
			return nil, nil, unsupported("comparison of %s (compare a column with a constant)", exprName(l))
		}
		ref, err := b.column(l)
		if err != nil {
			return nil, nil, err
		}
		if r.str("class") == "COLUMN_REF" {
			ref2, err := b.column(r)
			if err != nil {
				return nil, nil, err
			}
			if ref2.Table != ref.Table {
				return nil, nil, unsupported("comparison %s %s %s across tables (only join equalities between tables)", ref, op, ref2)
			}
			c1, c2 := b.s.Column(ref), b.s.Column(ref2)
			if c1.Type != c2.Type || c1.Type == spec.Key {
				return nil, nil, invalid("comparison %s %s %s: columns of types %s and %s", ref, op, ref2, c1.Type, c2.Type)
			}
			return ColCmpPred{L: ref, Op: op, R: ref2}, []string{ref.Table}, nil
		}
		if c := b.s.Column(ref); c != nil && c.Type == spec.Key && op != "=" && op != "<>" {
			return nil, nil, invalid("comparison %s %s …: %s is a key column; keys compare as text, by = <> or IN only", ref, op, ref)
		}
		v, err := b.literal(ref, r)
		if err != nil {
			return nil, nil, err
		}
		return CmpPred{Col: ref, Op: op, V: v}, []string{ref.Table}, nil
	case "COMPARE_BETWEEN":
		in := n.child("input")
		if in.str("class") != "COLUMN_REF" {
			return nil, nil, unsupported("BETWEEN on %s (only on a column)", exprName(in))
		}
		ref, err := b.column(in)
		if err != nil {
			return nil, nil, err
		}
		if c := b.s.Column(ref); c != nil && c.Type == spec.Key {
			return nil, nil, invalid("BETWEEN on %s: a key column; keys compare as text, by = <> or IN only", ref)
		}
		lo, err := b.literal(ref, n.child("lower"))
		if err != nil {
			return nil, nil, err
		}
		hi, err := b.literal(ref, n.child("upper"))
		if err != nil {
			return nil, nil, err
		}
		return BetweenPred{Col: ref, Lo: lo, Hi: hi}, []string{ref.Table}, nil
	case "COMPARE_IN", "COMPARE_NOT_IN":
		ch := n.list("children")
		if len(ch) < 2 || ch[0].str("class") != "COLUMN_REF" {
			return nil, nil, unsupported("IN on an expression (only on a column)")
		}
		ref, err := b.column(ch[0])
		if err != nil {
			return nil, nil, err
		}
		var vals []Lit
		for _, c := range ch[1:] {
			v, err := b.literal(ref, c)
			if err != nil {
				return nil, nil, err
			}
			vals = append(vals, v)
		}
		var p Pred = InPred{Col: ref, Values: vals}
		if n.str("type") == "COMPARE_NOT_IN" {
			p = NotPred{p}
		}
		return p, []string{ref.Table}, nil
	}
	return nil, nil, unsupported("%s in WHERE (comparisons, BETWEEN, IN, AND, OR, NOT only)", exprName(n))
}

// literal converts a constant node into a literal of ref's type.
func (b *builder) literal(ref spec.ColumnRef, n node) (Lit, error) {
	c := b.s.Column(ref)
	castTo := ""
	if n.str("class") == "CAST" {
		castTo = n.child("cast_type").str("id")
		n = n.child("child")
	}
	if n.str("class") != "CONSTANT" {
		return Lit{}, unsupported("%s compared with %s (only constants)", ref, exprName(n))
	}
	v := n.child("value")
	if isNull, _ := v["is_null"].(bool); isNull {
		return Lit{}, unsupported("NULL constant compared with %s", ref)
	}
	typ := v.child("type").str("id")
	text, err := constText(v, typ)
	if err != nil {
		return Lit{}, fmt.Errorf("%s: %w", ref, err)
	}
	switch c.Type {
	case spec.Date:
		if castTo != "" && castTo != "DATE" {
			return Lit{}, invalid("%s is a date, compared with a %s", ref, castTo)
		}
		d, err := time.Parse("2006-01-02", text)
		if err != nil {
			return Lit{}, invalid("%s is a date, compared with %q (write DATE 'YYYY-MM-DD')", ref, text)
		}
		return Lit{SQL: "DATE '" + d.Format("2006-01-02") + "'"}, nil
	case spec.Integer, spec.Numeric:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return Lit{}, invalid("%s is numeric, compared with %q", ref, text)
		}
		return Lit{SQL: floatLit(f)}, nil
	case spec.Boolean:
		// DuckDB's serialized BOOLEAN constant reads "t" or "f".
		switch strings.ToLower(text) {
		case "true", "t":
			return Lit{SQL: "TRUE"}, nil
		case "false", "f":
			return Lit{SQL: "FALSE"}, nil
		}
		return Lit{}, invalid("%s is boolean, compared with %q", ref, text)
	case spec.Categorical:
		if !slices.Contains(c.Values, text) {
			return Lit{}, invalid("%s: %q is not a value of its declared domain %v", ref, text, c.Values)
		}
		return Lit{SQL: sqlString(text)}, nil
	}
	// Key columns: compare as text of the stored value.
	return Lit{SQL: sqlString(text)}, nil
}

// constText renders a constant's value as text.
func constText(v node, typ string) (string, error) {
	switch x := v["value"].(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		if typ == "DECIMAL" {
			info := v.child("type").child("type_info")
			scale, _ := info["scale"].(float64)
			return strconv.FormatFloat(x/math.Pow(10, scale), 'g', -1, 64), nil
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	}
	return "", unsupported("constant of type %s", typ)
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (b *builder) selectList(items []node) error {
	agg := 0
	for _, it := range items {
		switch it.str("class") {
		case "COLUMN_REF":
			ref, err := b.column(it)
			if err != nil {
				return err
			}
			if !slices.Contains(b.q.GroupBy, ref) {
				return invalid("SELECT %s: not a GROUP BY column", ref)
			}
		case "FUNCTION":
			fn := strings.ToLower(it.str("function_name"))
			if d, _ := it["distinct"].(bool); d {
				return unsupported("%s(DISTINCT …)", strings.ToUpper(fn))
			}
			if it["filter"] != nil {
				return unsupported("FILTER on an aggregate")
			}
			ch := it.list("children")
			switch {
			case fn == "count_star", fn == "count" && len(ch) == 0:
				b.q.Agg = Count
			case fn == "sum" && len(ch) == 1:
				e, err := b.expr(ch[0])
				if err != nil {
					return err
				}
				b.q.Agg, b.q.Expr = Sum, e
			default:
				return unsupported("aggregate %s (COUNT(*) and SUM(expr) only)", strings.ToUpper(fn))
			}
			agg++
		case "STAR":
			return unsupported("SELECT * (one aggregate: COUNT(*) or SUM(expr))")
		default:
			return unsupported("%s in SELECT", exprName(it))
		}
	}
	if agg != 1 {
		return unsupported("%d aggregates in SELECT (want exactly one COUNT(*) or SUM(expr))", agg)
	}
	return nil
}

// expr converts the argument of SUM.
func (b *builder) expr(n node) (Expr, error) {
	switch n.str("class") {
	case "COLUMN_REF":
		ref, err := b.column(n)
		if err != nil {
			return nil, err
		}
		if c := b.s.Column(ref); c.Type != spec.Integer && c.Type != spec.Numeric {
			return nil, invalid("SUM over %s, a %s column (integer or numeric columns only: their declared range bounds each term)", ref, c.Type)
		}
		return ColExpr{ref}, nil
	case "CONSTANT":
		v := n.child("value")
		t, err := constText(v, v.child("type").str("id"))
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, invalid("constant %q in SUM", t)
		}
		return ConstExpr{f}, nil
	case "FUNCTION":
		op := n.str("function_name")
		ch := n.list("children")
		if is, _ := n["is_operator"].(bool); !is || len(op) != 1 || !strings.Contains("+-*/", op) {
			return nil, unsupported("%s in SUM (only + - * / over columns and constants)", exprName(n))
		}
		if len(ch) == 1 && op == "-" {
			e, err := b.expr(ch[0])
			if err != nil {
				return nil, err
			}
			return BinExpr{Op: '-', L: ConstExpr{0}, R: e}, nil
		}
		if len(ch) != 2 {
			return nil, unsupported("operator %s with %d operands", op, len(ch))
		}
		l, err := b.expr(ch[0])
		if err != nil {
			return nil, err
		}
		r, err := b.expr(ch[1])
		if err != nil {
			return nil, err
		}
		if op == "/" {
			c, ok := r.(ConstExpr)
			if !ok || c.V == 0 {
				return nil, unsupported("division by a column or by zero in SUM (only by a non-zero constant)")
			}
		}
		return BinExpr{Op: op[0], L: l, R: r}, nil
	}
	return nil, unsupported("%s in SUM", exprName(n))
}

// connected checks that the join equalities connect every table.
func (b *builder) connected() error {
	ts := b.q.Tables
	if len(ts) == 0 {
		return unsupported("no table")
	}
	reach := map[string]bool{ts[0]: true}
	for changed := true; changed; {
		changed = false
		for _, j := range b.q.Joins {
			if reach[j.Left.Table] != reach[j.Right.Table] {
				reach[j.Left.Table], reach[j.Right.Table] = true, true
				changed = true
			}
		}
	}
	for _, t := range ts {
		if !reach[t] {
			return unsupported("cross product: %s is joined to %s by no equality", t, ts[0])
		}
	}
	return nil
}

// SumBound returns the largest |expr| over the declared domains (1 for
// COUNT(*)): the public bound on one join result's contribution.
func (q *Query) SumBound(s *spec.Spec) (lo, hi float64) {
	if q.Agg == Count {
		return 1, 1
	}
	return q.Expr.bounds(s)
}
