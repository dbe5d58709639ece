package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// TestKeyMatchingIgnoresOtherTuples: whether two key values join must not
// depend on the other values of the column. "-0" is not an integer
// spelling, so it never joins "0" — neither when every other key is an
// integer (a BIGINT column) nor after a non-integer key is added (a text
// column). Otherwise one added tuple would change other tuples' matches,
// and the join's sensitivity would not be its degree.
func TestKeyMatchingIgnoresOtherTuples(t *testing.T) {
	for _, extra := range [][]string{nil, {"abc"}} {
		dir := t.TempDir()
		aRows := [][]string{{"-0"}, {"1"}}
		if extra != nil {
			aRows = append(aRows, extra)
		}
		a := writeCSV(t, dir, "a.csv", []string{"k"}, aRows)
		b := writeCSV(t, dir, "b.csv", []string{"k"}, [][]string{{"0"}, {"1"}})
		s := &spec.Spec{Tables: []spec.Table{
			{Name: "a", Source: a, Format: "csv", Columns: []spec.Column{{Name: "k", Type: spec.Key}}},
			{Name: "b", Source: b, Format: "csv", Columns: []spec.Column{{Name: "k", Type: spec.Key}}},
		}}
		e := openTest(t)
		if err := e.Load(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		h, err := hypergraph.New([]hypergraph.Relation{
			{Name: "a", Attrs: map[string]string{"K": "k"}},
			{Name: "b", Attrs: map[string]string{"K": "k"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		n, err := e.JoinSize(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("extra row %v: join size %d, want 1 (only \"1\" joins)", extra, n)
		}
	}
}

// TestLoadRejectsNamesDuckDBConfuses: table or column names that differ
// only in case, and a column named rowid, are refused before any data is
// read.
func TestLoadRejectsNamesDuckDBConfuses(t *testing.T) {
	dir := t.TempDir()
	src := writeCSV(t, dir, "t.csv", []string{"k", "K", "rowid"}, [][]string{{"1", "2", "3"}})
	key := func(n string) spec.Column { return spec.Column{Name: n, Type: spec.Key} }
	for _, tc := range []struct {
		name   string
		tables []spec.Table
		want   string
	}{
		{"tables by case", []spec.Table{
			{Name: "Orders", Source: src, Format: "csv", Columns: []spec.Column{key("k")}},
			{Name: "orders", Source: src, Format: "csv", Columns: []spec.Column{key("k")}},
		}, `table "orders" appears twice`},
		{"columns by case", []spec.Table{
			{Name: "t", Source: src, Format: "csv", Columns: []spec.Column{key("k"), key("K")}},
		}, `column "K": declared twice`},
		{"rowid", []spec.Table{
			{Name: "t", Source: src, Format: "csv", Columns: []spec.Column{key("k"), key("rowid")}},
		}, "rowid is reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := openTest(t).Load(context.Background(), &spec.Spec{Tables: tc.tables})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
