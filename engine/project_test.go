package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/synth-dp/synth/spec"
)

func TestProject(t *testing.T) {
	s := &spec.Spec{
		Tables: []spec.Table{
			{Name: "c", PrimaryKey: []string{"ck"}, Columns: []spec.Column{
				{Name: "seg", Type: spec.Categorical, Values: []string{"a"}},
				{Name: "ck", Type: spec.Key},
				{Name: "bal", Type: spec.Integer, Max: 9, OutOfDomain: spec.OutOfDomainDrop},
			}},
			{Name: "o", PrimaryKey: []string{"ok", "line"}, Columns: []spec.Column{
				{Name: "ok", Type: spec.Key},
				{Name: "line", Type: spec.Key},
				{Name: "ck", Type: spec.Key},
				{Name: "qty", Type: spec.Integer, Max: 9},
			}},
			{Name: "n", Columns: []spec.Column{{Name: "name", Type: spec.Categorical, Values: []string{"x"}}}},
		},
		Join: []spec.JoinEq{{Left: spec.ColumnRef{Table: "o", Column: "ck"}, Right: spec.ColumnRef{Table: "c", Column: "ck"}}},
	}
	ref := func(t, c string) spec.ColumnRef { return spec.ColumnRef{Table: t, Column: c} }
	names := func(t spec.Table) []string {
		var out []string
		for _, c := range t.Columns {
			out = append(out, c.Name)
		}
		return out
	}
	tests := []struct {
		name    string
		tables  []string
		cols    []spec.ColumnRef
		want    map[string][]string // table -> columns, in spec order
		pk      map[string][]string
		joins   int
		wantErr bool
	}{
		{name: "a count keeps the drop column", tables: []string{"c"},
			want: map[string][]string{"c": {"bal"}}},
		{name: "a count keeps the first key", tables: []string{"o"},
			want: map[string][]string{"o": {"ok"}}},
		{name: "a table without keys keeps its first column", tables: []string{"n"},
			want: map[string][]string{"n": {"name"}}},
		{name: "named columns in spec order, partial key dropped, join kept", tables: []string{"o", "c"},
			cols:  []spec.ColumnRef{ref("o", "qty"), ref("o", "ck"), ref("c", "ck"), ref("o", "ok")},
			want:  map[string][]string{"c": {"ck", "bal"}, "o": {"ok", "ck", "qty"}},
			pk:    map[string][]string{"c": {"ck"}},
			joins: 1},
		{name: "a join to a table left out is dropped", cols: []spec.ColumnRef{ref("o", "ck")},
			want: map[string][]string{"o": {"ck"}}},
		{name: "unknown table", tables: []string{"x"}, wantErr: true},
		{name: "unknown column", cols: []spec.ColumnRef{ref("c", "x")}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Project(s, tc.tables, tc.cols)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if len(p.Tables) != len(tc.want) {
				t.Fatalf("%d tables, want %d", len(p.Tables), len(tc.want))
			}
			for i, tb := range p.Tables {
				if i > 0 && slices.IndexFunc(s.Tables, func(x spec.Table) bool { return x.Name == tb.Name }) <
					slices.IndexFunc(s.Tables, func(x spec.Table) bool { return x.Name == p.Tables[i-1].Name }) {
					t.Errorf("tables out of the spec's order")
				}
				if got := names(tb); !slices.Equal(got, tc.want[tb.Name]) {
					t.Errorf("table %s: columns %v, want %v", tb.Name, got, tc.want[tb.Name])
				}
				if !slices.Equal(tb.PrimaryKey, tc.pk[tb.Name]) {
					t.Errorf("table %s: primary key %v, want %v", tb.Name, tb.PrimaryKey, tc.pk[tb.Name])
				}
			}
			if len(p.Join) != tc.joins {
				t.Errorf("%d join equalities, want %d", len(p.Join), tc.joins)
			}
			if len(s.Tables[0].Columns) != 3 || len(s.Join) != 1 {
				t.Errorf("Project changed the spec")
			}
		})
	}
}

// TestLoadProjected: a value outside its domain fails the load of a
// projection that reads its column, with the same error as the whole
// spec's load, and not one that leaves the column out.
func TestLoadProjected(t *testing.T) {
	ctx := context.Background()
	src := writeCSV(t, t.TempDir(), "orders.csv", ordersHeader, set(3, "o_prio", "9-NEVER"))
	s := ordersSpec(src, nil)
	e := openTest(t)
	whole := e.Load(ctx, s)
	var de *DataError
	if !errors.As(whole, &de) || de.Row != 3 || de.Column != "o_prio" {
		t.Fatalf("whole spec: %v, want a DataError at row 3, column o_prio", whole)
	}
	for _, tc := range []struct {
		cols    []string
		wantErr bool
	}{
		{[]string{"o_qty", "o_date"}, false},
		{[]string{"o_qty", "o_prio"}, true},
	} {
		var refs []spec.ColumnRef
		for _, c := range tc.cols {
			refs = append(refs, spec.ColumnRef{Table: "orders", Column: c})
		}
		p, err := Project(s, nil, refs)
		if err != nil {
			t.Fatal(err)
		}
		err = e.Load(ctx, p)
		if !tc.wantErr {
			if err != nil {
				t.Errorf("columns %v: %v", tc.cols, err)
			} else if n := tableCount(t, e, "orders"); n != 4 {
				t.Errorf("columns %v: %d rows, want 4", tc.cols, n)
			}
			continue
		}
		if err == nil || err.Error() != whole.Error() {
			t.Errorf("columns %v: %v, want %v", tc.cols, err, whole)
		}
	}
}
