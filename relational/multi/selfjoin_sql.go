package multi

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// JoinGroups computes the join groups of the queries in SQL through db:
// one aggregate per query, grouped by the id columns of every unit the
// query references ([UnitColumns]) and its GROUP BY columns, summing ψ in
// whole grid steps of g. Unit ids share one space over all unit relations
// (a customer and a supplier with the same key are different units).
// Coordinates follow [Coordinates].
func JoinGroups(ctx context.Context, db relational.DB, s *spec.Spec, queries []*relational.Query, units []string, g float64) ([]JoinGroup, int, error) {
	coords := Coordinates(s, queries)
	index := map[string]int{}
	for i, c := range coords {
		index[coordKey(c.Query, groupValues(c.Group))] = i
	}
	ids := map[string]int{}
	var out []JoinGroup
	for qi, q := range queries {
		used, cols, err := UnitColumns(s, q, units)
		if err != nil {
			return nil, 0, err
		}
		err = groupedSums(ctx, db, s, q, cols, g, func(keys []sql.NullString, psi float64) error {
			vals := make([]string, len(q.GroupBy))
			for i := range vals {
				vals[i] = normGroup(s.Column(q.GroupBy[i]), keys[len(cols)+i])
			}
			k, ok := index[coordKey(qi, vals)]
			if !ok || psi == 0 {
				return nil
			}
			jg := JoinGroup{Coord: k, Psi: psi}
			for i, u := range used {
				key := u + "\x00" + keys[i].String
				id, ok := ids[key]
				if !ok {
					id = len(ids)
					ids[key] = id
				}
				jg.Units = append(jg.Units, id)
			}
			out = append(out, jg)
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("multi: join groups of %q: %w", q.Text, err)
		}
	}
	return out, len(coords), nil
}
