package multi

import (
	"fmt"

	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// The ownership rules are relational's (R2T's): a join result belongs to
// the unit tuples its unit columns name only if the query's join follows
// every foreign key from its private tables up to the unit.

// UnitColumn returns the column of q's join that holds the id of the unit
// (the unit relation's one-column primary key, or the last foreign key on
// the path to it) of every join result, after checking that q's join
// enforces the ownership, that every private table of q belongs to the
// unit, and that q references the unit at all.
func UnitColumn(s *spec.Spec, q *relational.Query, unit string) (spec.ColumnRef, error) {
	used, cols, err := UnitColumns(s, q, []string{unit})
	if err != nil {
		return spec.ColumnRef{}, err
	}
	if len(used) != 1 {
		return spec.ColumnRef{}, invalid("query %q does not reference unit %s", q.Text, unit)
	}
	return cols[0], nil
}

// UnitColumns finds, for every unit that q's tables reference, the column
// holding its id (see [UnitColumn]); used lists those units. Two or more
// used units mean that a join result references several unit tuples: the
// self-join case of Dong–Sun–Yi §5. The rules are relational's
// ([relational.UnitColumns], R2T's); errors wrap [ErrInvalid] and
// relational.ErrInvalid.
func UnitColumns(s *spec.Spec, q *relational.Query, units []string) (used []string, cols []spec.ColumnRef, err error) {
	used, cols, err = relational.UnitColumns(s, q, units)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: query %q: %w", ErrInvalid, q.Text, err)
	}
	return used, cols, nil
}
