// Package score measures how faithful a synthetic file is, independently of
// the release path: the total-variation distance (TVD) of marginal tables
// between the true data and a synthetic file, beside the TVD of the uniform
// distribution (the floor a useless release gets).
//
// It is an oracle for tests and the accuracy table, so it shares as little
// as possible with the code it checks: the true join is read from the raw
// source files with DuckDB's own CSV/Parquet readers (every value as text,
// the join written here from the spec's equalities, not by engine/), and
// every value — true or synthetic — is binned in Go by spec.Column.Bin, not
// by the engine's SQL binning. It reads private data: its numbers are
// internal (DESIGN.md §3, invariant 5).
//
// # Tables releases
//
// A tables release (DIR/tables/<table>.parquet beside the flat file) is
// scored table by table ([EvaluateTables]; docs/relational-eval.md): the
// privacy unit's ownership tree from the spec ([OwnershipTree]), the true
// and synthetic tables linked by their keys ([TrueTables],
// [SyntheticTables]), every 1- and 2-way marginal of each table's own
// rows and the fan-out of every edge ([ScoreTables]), and seeded group
// queries ([GroupQueries], [ScoreGroups]).
package score

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the DuckDB driver

	"github.com/synth-dp/synth/spec"
)

// Table is a set of binned rows over the released columns: Rows[i][j] is
// the bin of released column j in row i.
type Table struct {
	Rows [][]int
}

// readerFor returns the DuckDB table function reading path as text.
func readerFor(path string) string {
	q := "'" + strings.ReplaceAll(path, "'", "''") + "'"
	lower := strings.ToLower(path)
	if strings.HasSuffix(lower, ".parquet") {
		return "read_parquet(" + q + ")"
	}
	return "read_csv(" + q + ", all_varchar = true, header = true)"
}

func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// bin reads the text rows of q (one column per released column, then one
// per column of drop) and bins them with spec.Column.Bin; a value that does
// not bin is an error naming it. A NULL (or empty text) of a nullable
// column bins to its NULL cell; other NULLs in a released column are
// skipped with the row. With policies (the true join), the columns' out_of_domain
// policies apply as the load applies them: a row whose drop column (a
// released one, or one of drop) is empty or outside its domain is skipped,
// and a clamp column's number or date outside its range goes to the
// nearest end's bin. Synthetic files are read without policies: every
// value must bin. With key, q has one more column after drop's, returned
// for every kept row.
func bin(ctx context.Context, db *sql.DB, q string, cols, drop []*spec.Column, policies, key bool) (*Table, []string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, nil, fmt.Errorf("score: %w\n%s", err, q)
	}
	defer rows.Close()
	out := &Table{}
	var keys []string
	n := len(cols) + len(drop)
	if key {
		n++
	}
	raw := make([]sql.NullString, n)
	dst := make([]any, len(raw))
	for i := range raw {
		dst[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return nil, nil, fmt.Errorf("score: %w", err)
		}
		r, ok, err := binRow(raw, cols, drop, policies)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			out.Rows = append(out.Rows, r)
			if key {
				keys = append(keys, raw[n-1].String)
			}
		}
	}
	return out, keys, rows.Err()
}

// binRow bins one row of text values: raw holds the released columns
// cols, then the drop columns drop (see bin for the policies). ok is false
// when the row is skipped.
func binRow(raw []sql.NullString, cols, drop []*spec.Column, policies bool) (r []int, ok bool, err error) {
	for j, c := range drop {
		v := raw[len(cols)+j]
		if !v.Valid || v.String == "" {
			if c.Nullable {
				continue // NULL is a value of the domain
			}
			return nil, false, nil
		}
		if _, err := c.Bin(v.String); err != nil {
			return nil, false, nil
		}
	}
	r = make([]int, len(cols))
	for j, c := range cols {
		if c.Nullable && (!raw[j].Valid || raw[j].String == "") {
			// NULL (an empty CSV field, a Parquet null): its own cell,
			// as the load bins it.
			r[j] = c.NullCell()
			continue
		}
		if !raw[j].Valid {
			return nil, false, nil
		}
		b, err := c.Bin(raw[j].String)
		if err != nil && policies && errors.Is(err, spec.ErrOutOfDomain) {
			switch c.OutOfDomain {
			case spec.OutOfDomainDrop:
				return nil, false, nil
			case spec.OutOfDomainClamp:
				b, err = clamped(c, raw[j].String, err)
			}
		}
		if err != nil {
			return nil, false, fmt.Errorf("score: column %s: value %q: %w", c.Name, raw[j].String, err)
		}
		r[j] = b
	}
	return r, true, nil
}

// clamped is the bin of a clamp column's value outside its range: the
// first bin below the range, the last above it. A value that is not a
// number or date (or lies inside the range and still does not bin, e.g. a
// fraction in an integer column) keeps err.
func clamped(c *spec.Column, raw string, err error) (int, error) {
	below, above := false, false
	switch c.Type {
	case spec.Integer, spec.Numeric:
		x, perr := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if perr != nil || math.IsNaN(x) {
			return 0, err
		}
		below, above = x < c.Min, x > c.Max
	case spec.Date:
		d, perr := time.Parse(time.DateOnly, strings.TrimSpace(raw))
		if perr != nil {
			return 0, err
		}
		below, above = d.Before(c.DateMin), d.After(c.DateMax)
	}
	switch {
	case below:
		return 0, nil
	case above:
		return c.ValueSize() - 1, nil
	}
	return 0, err
}

func open() (*sql.DB, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	return db, nil
}

// Truth reads the true join of the spec's tables over the released columns
// from the raw source files, with every column's out_of_domain policy
// applied in Go (see bin): a join row survives only if every drop column
// of its tables holds a value of its domain, and clamp columns clamp.
func Truth(ctx context.Context, s *spec.Spec) (*Table, error) {
	t, _, err := truth(ctx, s, false)
	return t, err
}

// TruthUnits is [Truth] with, for every row, the privacy unit's primary
// key (as text) of the join row: what a peer that bounds each unit's rows
// by hand needs. The spec must name a unit with a one-column primary key.
func TruthUnits(ctx context.Context, s *spec.Spec) (*Table, []string, error) {
	return truth(ctx, s, true)
}

func truth(ctx context.Context, s *spec.Spec, units bool) (*Table, []string, error) {
	db, err := open()
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	var from []string
	for _, t := range s.Tables {
		from = append(from, readerFor(t.Source)+" AS "+ident(t.Name))
	}
	var where []string
	for _, j := range s.Join {
		where = append(where, ident(j.Left.Table)+"."+ident(j.Left.Column)+" = "+ident(j.Right.Table)+"."+ident(j.Right.Column))
	}
	var sel []string
	for _, r := range s.Release.Columns {
		sel = append(sel, "CAST("+ident(r.Table)+"."+ident(r.Column)+" AS VARCHAR)")
	}
	// Every drop column outside the released ones: dropping a tuple
	// removes every join row it is part of, which is what skipping those
	// join rows does.
	released := map[spec.ColumnRef]bool{}
	for _, r := range s.Release.Columns {
		released[r] = true
	}
	var drop []*spec.Column
	for _, t := range s.Tables {
		for i := range t.Columns {
			c := &t.Columns[i]
			if c.Type != spec.Key && c.OutOfDomain == spec.OutOfDomainDrop && !released[spec.ColumnRef{Table: t.Name, Column: c.Name}] {
				drop = append(drop, c)
				sel = append(sel, "CAST("+ident(t.Name)+"."+ident(c.Name)+" AS VARCHAR)")
			}
		}
	}
	if units {
		var u *spec.Table
		for i := range s.Tables {
			if s.Tables[i].Name == s.Privacy.Unit {
				u = &s.Tables[i]
			}
		}
		if u == nil || len(u.PrimaryKey) != 1 {
			return nil, nil, fmt.Errorf("score: the spec's privacy unit %q is not a table with a one-column primary key", s.Privacy.Unit)
		}
		sel = append(sel, "CAST("+ident(u.Name)+"."+ident(u.PrimaryKey[0])+" AS VARCHAR)")
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + strings.Join(from, ", ")
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return bin(ctx, db, q, s.ReleaseColumns(), drop, true, units)
}

// Synthetic reads a synthetic file (Parquet, or CSV with a header) whose
// columns are named names, in the order of the released columns.
func Synthetic(ctx context.Context, s *spec.Spec, path string, names []string) (*Table, error) {
	if len(names) != len(s.Release.Columns) {
		return nil, fmt.Errorf("score: %d column names for %d released columns", len(names), len(s.Release.Columns))
	}
	db, err := open()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var sel []string
	for _, n := range names {
		sel = append(sel, "CAST("+ident(n)+" AS VARCHAR)")
	}
	t, _, err := bin(ctx, db, "SELECT "+strings.Join(sel, ", ")+" FROM "+readerFor(path), s.ReleaseColumns(), nil, false, false)
	return t, err
}

// Marginal returns the normalised marginal table of t over the released
// column positions cols (sizes their domain sizes), in mixed radix, first
// column most significant. An empty table gives all zeros.
func (t *Table) Marginal(cols, sizes []int) []float64 {
	n := 1
	for _, c := range cols {
		n *= sizes[c]
	}
	out := make([]float64, n)
	for _, r := range t.Rows {
		k := 0
		for _, c := range cols {
			k = k*sizes[c] + r[c]
		}
		out[k]++
	}
	if len(t.Rows) > 0 {
		for i := range out {
			out[i] /= float64(len(t.Rows))
		}
	}
	return out
}

// TVD is the total-variation distance ½·Σ|p − q| of two distributions of
// the same length.
func TVD(p, q []float64) float64 {
	s := 0.0
	for i := range p {
		s += math.Abs(p[i] - q[i])
	}
	return s / 2
}

// Uniform returns the uniform distribution on n cells.
func Uniform(n int) []float64 {
	u := make([]float64, n)
	for i := range u {
		u[i] = 1 / float64(n)
	}
	return u
}

// Result is the score of one synthetic table against the truth.
type Result struct {
	// Marginals are the scored column sets (released column positions).
	Marginals [][]int
	// TVD[i] and UniformTVD[i] are the synthetic and the uniform
	// distribution's TVD on marginal i.
	TVD, UniformTVD []float64
	// MeanTVD and MeanUniformTVD are their means.
	MeanTVD, MeanUniformTVD float64
	// Rows and TrueRows are the row counts.
	Rows, TrueRows int
}

// Score compares syn with truth on the given marginals (released column
// positions); sizes are the released columns' domain sizes.
func Score(truth, syn *Table, marginals [][]int, sizes []int) Result {
	r := Result{Marginals: marginals, Rows: len(syn.Rows), TrueRows: len(truth.Rows)}
	for _, m := range marginals {
		p := truth.Marginal(m, sizes)
		r.TVD = append(r.TVD, TVD(p, syn.Marginal(m, sizes)))
		r.UniformTVD = append(r.UniformTVD, TVD(p, Uniform(len(p))))
	}
	for i := range r.TVD {
		r.MeanTVD += r.TVD[i] / float64(len(r.TVD))
		r.MeanUniformTVD += r.UniformTVD[i] / float64(len(r.TVD))
	}
	return r
}

// WorkloadMarginals returns the spec's workload marginals as released
// column positions; with no marginal in the workload, every 1- and 2-way
// marginal.
func WorkloadMarginals(s *spec.Spec) ([][]int, error) {
	pos := map[spec.ColumnRef]int{}
	for i, r := range s.Release.Columns {
		pos[r] = i
	}
	var out [][]int
	for _, m := range s.Workload.Marginals {
		var cols []int
		for _, r := range m {
			p, ok := pos[r]
			if !ok {
				return nil, fmt.Errorf("score: workload column %s is not released", r)
			}
			cols = append(cols, p)
		}
		out = append(out, cols)
	}
	if len(out) == 0 {
		return AllOneTwoWay(len(s.Release.Columns)), nil
	}
	return out, nil
}

// AllOneTwoWay returns every 1-way and 2-way marginal of d columns.
func AllOneTwoWay(d int) [][]int {
	var out [][]int
	for i := 0; i < d; i++ {
		out = append(out, []int{i})
	}
	for i := 0; i < d; i++ {
		for j := i + 1; j < d; j++ {
			out = append(out, []int{i, j})
		}
	}
	return out
}
