package numerical

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
)

// Aggregator runs an aggregate SQL query and says how keys are compared;
// *engine.Engine implements it. Private data is read only through such
// aggregates (DESIGN.md §1).
type Aggregator interface {
	Aggregate(ctx context.Context, q string, args []any, scan func(*sql.Rows) error) error
	// KeyText is the expression a key column x is compared on
	// ([engine.Engine.KeyText]).
	KeyText(x string) string
}

var _ Aggregator = (*engine.Engine)(nil)

// ColumnRef names a column of a loaded table.
type ColumnRef struct {
	Table, Column string
}

// TwoTableJoin is the equi-join of two loaded private tables on one key
// each (Left.Key = Right.Key), e.g. orders ⋈ lineitem on the order key.
type TwoTableJoin struct {
	Left, Right ColumnRef
}

// JoinSpec is a numerical workload over a two-table join: the grid is
// the product of the condition columns' engine bins (engine.BinColumn, in
// [0, Sizes[d])), and the measure is the product of the Measure columns
// (one column for a plain sum; two for a revenue-like product such as
// l_extendedprice · l_discount), rounded to the universe's resolution.
type JoinSpec struct {
	Join       TwoTableJoin
	Conditions []ColumnRef
	Measure    []ColumnRef
}

// quote is a SQL identifier, quotes doubled.
func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (j JoinSpec) alias(t string) string {
	if t == j.Join.Left.Table {
		return "l"
	}
	return "r"
}

func (j JoinSpec) col(c ColumnRef) string { return j.alias(c.Table) + "." + quote(c.Column) }

// from is the FROM clause of the join, keys compared through db's
// KeyText as the engine's statistics (and Δ̃) compare them: the engine
// stores a key as BIGINT or text depending on the data, and raw columns
// would let the SQL engine cast text to a number ("07" = 7) and join rows
// the sensitivity bound keeps apart (see [engine.Engine.KeyText]).
func (j JoinSpec) from(db Aggregator) string {
	return " FROM " + quote(j.Join.Left.Table) + " AS l JOIN " + quote(j.Join.Right.Table) + " AS r ON " +
		db.KeyText(j.col(j.Join.Left)) + " = " + db.KeyText(j.col(j.Join.Right))
}

func (j JoinSpec) validate(u *Universe) error {
	if len(j.Conditions) != len(u.grid.Sizes) || len(j.Measure) == 0 {
		return fmt.Errorf("%w: join spec with %d conditions for %d grid columns and %d measure columns",
			ErrInvalidInput, len(j.Conditions), len(u.grid.Sizes), len(j.Measure))
	}
	for _, c := range append(append([]ColumnRef{j.Join.Left, j.Join.Right}, j.Conditions...), j.Measure...) {
		if c.Table != j.Join.Left.Table && c.Table != j.Join.Right.Table {
			return fmt.Errorf("%w: column %s.%s is on neither side of the join", ErrInvalidInput, c.Table, c.Column)
		}
	}
	return nil
}

// cellExpr is the SQL of the grid cell index (mixed radix over the bins).
func (j JoinSpec) cellExpr(u *Universe) string {
	expr := "0"
	for d, c := range j.Conditions {
		expr = fmt.Sprintf("(%s) * %d + %s.%s", expr, u.grid.Sizes[d], j.alias(c.Table), quote(engine.BinColumn(c.Column)))
	}
	return expr
}

func (j JoinSpec) measureExpr() string {
	parts := make([]string, len(j.Measure))
	for i, c := range j.Measure {
		parts[i] = "CAST(" + j.col(c) + " AS DOUBLE PRECISION)"
	}
	return strings.Join(parts, " * ")
}

// JoinPoints returns the private points of the join — per grid cell and
// measure value in units of b (clamped to the domain), the number of join
// tuples — computed by one GROUP BY in the engine: the join is never
// materialised in Go, and the result has at most min(|J|, |X/R|·(Δ₊+Δ₋+1))
// rows.
func JoinPoints(ctx context.Context, db Aggregator, js JoinSpec, u *Universe) ([]Point, error) {
	if err := js.validate(u); err != nil {
		return nil, err
	}
	y := fmt.Sprintf("LEAST(GREATEST(CAST(round(%s / %s) AS BIGINT), %d), %d)", js.measureExpr(), fmtFloat(u.b), -u.bound[1], u.bound[0])
	q := "SELECT " + js.cellExpr(u) + " AS cell, " + y + " AS y, COUNT(*)" + js.from(db) + " GROUP BY 1, 2"
	var out []Point
	err := db.Aggregate(ctx, q, nil, func(r *sql.Rows) error {
		var p Point
		if err := r.Scan(&p.Cell, &p.Units, &p.Count); err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("numerical: join points: %w", err)
	}
	return out, nil
}

// JoinExactSums returns Σ measure per grid cell of the join, unrounded:
// private, for utility evaluation only.
func JoinExactSums(ctx context.Context, db Aggregator, js JoinSpec, u *Universe) ([]float64, error) {
	if err := js.validate(u); err != nil {
		return nil, err
	}
	q := "SELECT " + js.cellExpr(u) + " AS cell, SUM(" + js.measureExpr() + ")" + js.from(db) + " GROUP BY 1"
	out := make([]float64, u.cells)
	err := db.Aggregate(ctx, q, nil, func(r *sql.Rows) error {
		var c int64
		var v float64
		if err := r.Scan(&c, &v); err != nil {
			return err
		}
		if c < 0 || c >= u.cells {
			return fmt.Errorf("cell %d outside [0, %d)", c, u.cells)
		}
		out[c] = v
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("numerical: join sums: %w", err)
	}
	return out, nil
}

func fmtFloat(f float64) string { return fmt.Sprintf("CAST(%v AS DOUBLE PRECISION)", f) }

// TwoTableDeltaTilde returns Δ̃ of Ghazi et al. Alg. 1 for the join, the
// per-tuple sensitivity the numerical mechanisms multiply into every
// sensitivity (exactly as PMW does for linear queries): Δ = the largest
// degree of a join value in either table (a tuple added to one side joins
// that many tuples of the other; both sides private), Δ̃ = Δ + X with X
// the exact integer TLap of dp.TruncatedDiscreteLaplace(ε, δ, 1) — the
// degree has sensitivity 1 — so Δ̃ ≥ Δ always and the release of Δ̃ is
// (ε, δ)-DP. Alg. 1 gives it (ε/2, δ/2) of the run's budget, the
// mechanism the other half. This is joinasone's Δ̃ for two tables
// (joinasone computes it inside its own run and does not export it).
func TwoTableDeltaTilde(ctx context.Context, src dp.Source, db Aggregator, j TwoTableJoin, eps, delta float64, l *dp.Ledger) (int64, error) {
	pad, err := dp.NewTruncatedDiscreteLaplace(eps, delta, 1)
	if err != nil {
		return 0, fmt.Errorf("numerical: Δ̃: %w", err)
	}
	if l != nil {
		if err := l.Charge("numerical: Δ̃ of the join (Ghazi et al. Alg. 1)", dp.Budget{Epsilon: eps, Delta: delta},
			fmt.Sprintf("max degree (sensitivity 1) plus the exact truncated discrete Laplace on {0, …, %d}", 2*pad.Tau()), nil); err != nil {
			return 0, fmt.Errorf("numerical: %w", err)
		}
	}
	var deg int64
	for _, c := range []ColumnRef{j.Left, j.Right} {
		q := "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM " + quote(c.Table) + " WHERE " + quote(c.Column) +
			" IS NOT NULL GROUP BY " + quote(c.Column) + ") AS d"
		err := db.Aggregate(ctx, q, nil, func(r *sql.Rows) error {
			var d int64
			if err := r.Scan(&d); err != nil {
				return err
			}
			deg = max(deg, d)
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("numerical: Δ̃: %w", err)
		}
	}
	dt := deg + pad.Sample(src)
	if l != nil {
		l.Publish("numerical_delta_tilde", float64(dt))
	}
	return max(dt, 1), nil
}
