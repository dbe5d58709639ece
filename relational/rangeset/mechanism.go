package rangeset

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// Neighbours selects the neighbouring relation the sensitivity is for.
// The zero value is [AddRemove], the neighbours of DESIGN.md §3 that the
// ledger and synth answer account under.
type Neighbours int

const (
	// AddRemove is the tuple-level DP of DESIGN.md §3: a neighbour adds or
	// removes one record, which changes at most MaxDepth queries by one
	// (and exactly that many for a record at a deepest point): S_L1 =
	// MaxDepth. The default (zero value).
	AddRemove Neighbours = iota
	// Replace is Inan et al.'s Def. 1: a neighbour replaces one record by
	// another. The removed and the added record each change at most
	// MaxDepth queries by one, so S_L1 ≤ min(|Q|, 2·MaxDepth) (their
	// Thm. 6 and 7). It also bounds add/remove neighbours, at up to twice
	// the noise.
	Replace
)

// Sensitivity returns the L1 sensitivity bound of the range-count queries
// boxes under nb and the maximum depth it is computed from: D for
// [AddRemove], min(|Q|, 2D) for [Replace] and for any other value (the
// larger bound, valid under both). It reads no data.
func Sensitivity(boxes []Box, nb Neighbours) (sens, depth int) {
	depth = MaxDepth(boxes)
	if nb == AddRemove {
		return depth, depth
	}
	return min(len(boxes), 2*depth), depth
}

// Release adds discrete Laplace noise of scale sens/ε to every count:
// the Laplace mechanism on the whole vector (Dwork et al. 2006; Inan et al.
// §2.1). ε-DP when sens bounds the L1 sensitivity of the count vector
// ([Sensitivity]); the exact integer sampler makes the output integers
// (DESIGN.md §3 inv. 6). sens = 0 (no query can contain a record) releases
// the counts, all zero, unchanged.
func Release(src dp.Source, counts []int64, sens int, eps float64) ([]int64, float64, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, 0, fmt.Errorf("rangeset: ε = %v, want a finite number > 0", eps)
	}
	out := make([]int64, len(counts))
	if sens <= 0 {
		copy(out, counts)
		return out, 0, nil
	}
	// A scale below the sampler's floor is raised to it: more noise is
	// still ε-DP.
	lap, err := dp.NewDiscreteLaplace(max(dp.NoiseScale(float64(sens), eps), dp.MinDiscreteScale))
	if err != nil {
		return nil, 0, fmt.Errorf("rangeset: %w", err)
	}
	for i, c := range counts {
		out[i] = c + lap.Sample(src)
	}
	return out, lap.Scale(), nil
}

// Answer answers the set's queries with one Laplace mechanism of scale
// S/ε, S from [Sensitivity]: the whole budget ε is charged to ledger once,
// before any data is read, and the true counts are aggregate SQL through
// db. Each [relational.Result] reports the whole ε (one release), the
// value clamped at 0, and the
// 95% error bound ⌈b·ln 40⌉ of each answer, b = S/ε: for the discrete
// Laplace P[|X| ≥ t] = 2e^{−t/b}/(1 + e^{−1/b}) < 2e^{−t/b}. The table must
// be private.
func Answer(ctx context.Context, db relational.DB, src dp.Source, s *spec.Spec, set *Set, eps float64, nb Neighbours, ledger *dp.Ledger) ([]relational.Result, error) {
	if len(set.Boxes) == 0 {
		return nil, fmt.Errorf("%w: no query", ErrNotBox)
	}
	t := s.Table(set.Table)
	if t == nil || t.Public {
		return nil, fmt.Errorf("%w: table %s is public or unknown: nothing to protect", ErrNotBox, set.Table)
	}
	sens, depth := Sensitivity(set.Boxes, nb)
	rule := "Inan et al. Alg. 3: S_L1 ≤ min(|Q|, 2·max clique) (replace-one neighbours), max clique = max depth (Helly)"
	if nb == AddRemove {
		rule = "tuple-level DP (add/remove one record): S_L1 = max depth of the query boxes"
	}
	err := ledger.Charge("Laplace mechanism on a range-query set", dp.Budget{Epsilon: eps}, rule,
		map[string]any{"queries": len(set.Boxes), "max_depth": depth, "sensitivity": sens, "table": set.Table})
	if err != nil {
		return nil, err
	}
	counts, err := trueCounts(ctx, db, set)
	if err != nil {
		return nil, err
	}
	vals, scale, err := Release(src, counts, sens, eps)
	if err != nil {
		return nil, err
	}
	bound := math.Ceil(scale * math.Log(40))
	out := make([]relational.Result, len(vals))
	for i, v := range vals {
		sc, b := scale, bound
		out[i] = relational.Result{Query: set.Queries[i].Text,
			Mechanism:  fmt.Sprintf("Laplace on a range-query set (|Q| = %d, max depth %d, L1 sensitivity %d)", len(vals), depth, sens),
			NoiseScale: &sc, NoiseBound95: &b, Epsilon: eps}
		// A count is ≥ 0: clamped (post-processing); P[X ≥ b·ln 20] ≤ 0.05
		// gives the one-sided lower bound.
		out[i].SetValue(v, scale*math.Log(20), true)
		ledger.Publish(fmt.Sprintf("answer_%d", i), float64(out[i].Value))
	}
	return out, nil
}

// trueCounts returns the true count of every query of set ([cubeCounts]:
// one aggregate over the table for the whole set).
func trueCounts(ctx context.Context, db relational.DB, set *Set) ([]int64, error) {
	return cubeCounts(ctx, db, set)
}

// filterCounts runs the counts as SQL, 100 FILTER aggregates per
// statement, each the query's own WHERE clause: one scan of the table per
// 100 queries. The tests' oracle for [cubeCounts].
func filterCounts(ctx context.Context, db relational.DB, set *Set) ([]int64, error) {
	out := make([]int64, 0, len(set.Queries))
	for start := 0; start < len(set.Queries); start += 100 {
		end := min(start+100, len(set.Queries))
		var aggs []string
		for _, q := range set.Queries[start:end] {
			a := "COUNT(*)"
			if w, ok := q.Where[set.Table]; ok {
				a += " FILTER (WHERE " + predSQL(w) + ")"
			}
			aggs = append(aggs, a)
		}
		text := "SELECT " + strings.Join(aggs, ", ") + " FROM " + ident(set.Table)
		vals := make([]int64, end-start)
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &vals[i]
		}
		err := db.Aggregate(ctx, text, nil, func(r *sql.Rows) error { return r.Scan(dest...) })
		if err != nil {
			return nil, fmt.Errorf("rangeset: counts: %w", err)
		}
		out = append(out, vals...)
	}
	return out, nil
}

func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func col(r spec.ColumnRef) string { return ident(r.Column) }

// pred renders a range predicate (the forms [Parse] accepts).
func predSQL(p relational.Pred) string {
	switch x := p.(type) {
	case relational.AndPred:
		s := make([]string, len(x.Terms))
		for i, t := range x.Terms {
			s[i] = predSQL(t)
		}
		return "(" + strings.Join(s, " AND ") + ")"
	case relational.CmpPred:
		return "(" + col(x.Col) + " " + x.Op + " " + x.V.SQL + ")"
	case relational.BetweenPred:
		return "(" + col(x.Col) + " BETWEEN " + x.Lo.SQL + " AND " + x.Hi.SQL + ")"
	case relational.InPred:
		return "(" + col(x.Col) + " = " + x.Values[0].SQL + ")"
	}
	panic(fmt.Sprintf("rangeset: predicate %T passed Parse", p)) // programmer error
}
