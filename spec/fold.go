package spec

import (
	"fmt"

	"github.com/synth-dp/synth/hypergraph"
)

// Folding builds the join hypergraph ([Spec.Hypergraph]) and folds every
// public table whose declared primary key is covered by its join with a
// private table, and whose fold is lossless (it links no other relation),
// into that table ([hypergraph.Fold], which states the rule
// and proves that statistics of the folded join keep their privacy
// guarantees). It depends on the spec only, never on the data; the engine
// checks, when it builds the folded relations, that each folded public
// table's key is unique in its data.
func (s *Spec) Folding() (*hypergraph.Folding, error) {
	h, err := s.Hypergraph()
	if err != nil {
		return nil, err
	}
	f, err := hypergraph.Fold(h, s.PublicKeys())
	if err != nil {
		return nil, &Error{File: s.File, Key: "tables", Err: fmt.Errorf("folding public tables: %w", err)}
	}
	return f, nil
}

// PublicKeys returns the declared primary key of every public table that
// has one, by table name: the keys [hypergraph.Fold] may fold on.
func (s *Spec) PublicKeys() map[string][]string {
	keys := map[string][]string{}
	for _, t := range s.Tables {
		if t.Public && len(t.PrimaryKey) > 0 {
			keys[t.Name] = t.PrimaryKey
		}
	}
	return keys
}

// FoldColumns maps columns of the spec's tables to where they live in the
// folded hypergraph of f ([hypergraph.Folding.Locate]): a column of a table
// folded into a relation becomes the column [hypergraph.MemberColumn] of
// that relation, others are returned as they are. A column of a table f
// does not know is returned unchanged (the engine reports it).
func FoldColumns(f *hypergraph.Folding, cols []ColumnRef) []ColumnRef {
	out := make([]ColumnRef, len(cols))
	for i, c := range cols {
		out[i] = c
		if rel, col, ok := f.Locate(c.Table, c.Column); ok {
			out[i] = ColumnRef{Table: rel, Column: col}
		}
	}
	return out
}
