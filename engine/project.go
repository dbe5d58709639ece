package engine

import (
	"fmt"
	"slices"

	"github.com/synth-dp/synth/spec"
)

// Project returns the part of s that a run reading only the given tables
// and columns needs to load: those tables, in the spec's order, each with
// its named columns plus every column of the drop policy (a drop column
// decides which rows the table has, whether a run reads it or not), and
// the join equalities between kept columns. A table none of whose columns
// is named keeps one column, its first key column if it has one (keys are
// never checked against a domain), else its first declared column, so
// that its rows can be counted. A primary key survives only when all its
// columns are kept. Nothing else of s changes; the tables' Column values
// are shared with s.
//
// [Engine.Load] of the projection reads and checks only the kept columns,
// exactly as a load of s checks them: a value outside the domain of a
// column the run does not read no longer fails it. A table or column that
// is not in s is an error.
func Project(s *spec.Spec, tables []string, cols []spec.ColumnRef) (*spec.Spec, error) {
	if s == nil {
		return nil, fmt.Errorf("engine: project: no spec")
	}
	want := map[string]map[string]bool{}
	for _, t := range tables {
		if s.Table(t) == nil {
			return nil, fmt.Errorf("engine: project: no table %q in the spec", t)
		}
		if want[t] == nil {
			want[t] = map[string]bool{}
		}
	}
	for _, r := range cols {
		if s.Column(r) == nil {
			return nil, fmt.Errorf("engine: project: no column %s in the spec", r)
		}
		if want[r.Table] == nil {
			want[r.Table] = map[string]bool{}
		}
		want[r.Table][r.Column] = true
	}
	out := *s
	out.Tables = nil
	for _, t := range s.Tables {
		keep, ok := want[t.Name]
		if !ok {
			continue
		}
		p := t
		p.Columns = nil
		for _, c := range t.Columns {
			if keep[c.Name] || c.Type != spec.Key && policy(&c) == spec.OutOfDomainDrop {
				p.Columns = append(p.Columns, c)
			}
		}
		if len(p.Columns) == 0 && len(t.Columns) > 0 {
			first := t.Columns[0]
			for _, c := range t.Columns {
				if c.Type == spec.Key {
					first = c
					break
				}
			}
			p.Columns = []spec.Column{first}
		}
		p.PrimaryKey = slices.Clone(t.PrimaryKey)
		for _, k := range t.PrimaryKey {
			if p.Column(k) == nil {
				p.PrimaryKey = nil
				break
			}
		}
		out.Tables = append(out.Tables, p)
	}
	out.Join = nil
	for _, j := range s.Join {
		if out.Column(j.Left) != nil && out.Column(j.Right) != nil {
			out.Join = append(out.Join, j)
		}
	}
	return &out, nil
}
