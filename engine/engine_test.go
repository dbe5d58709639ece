package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{"", "duckdb", "duckdb:", "duckdb:" + filepath.Join(t.TempDir(), "x.duckdb")} {
		e, err := Open(ctx, dsn)
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		if err := e.Close(); err != nil {
			t.Fatalf("Close after Open(%q): %v", dsn, err)
		}
	}
	for _, dsn := range []string{"oracle://localhost/db", "sqlite:x.db", "mysql"} {
		_, err := Open(ctx, dsn)
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("Open(%q) = %v, want ErrUnsupported", dsn, err)
		}
	}
}

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := writeCSV(t, dir, "a.csv", []string{"k", "x"}, [][]string{{"1", "p"}, {"1", "q"}, {"2", "p"}})
	b := writeCSV(t, dir, "b.csv", []string{"k2", "n"}, [][]string{{"1", "3"}, {"2", "4"}, {"2", "5"}, {"3", "1"}})
	s := &spec.Spec{
		Tables: []spec.Table{
			{Name: "a", Source: a, Columns: []spec.Column{{Name: "k", Type: spec.Key}, {Name: "x", Type: spec.Categorical, Values: []string{"p", "q"}}}},
			{Name: "b", Source: b, Columns: []spec.Column{{Name: "k2", Type: spec.Key}, {Name: "n", Type: spec.Integer, Min: 1, Max: 5}}},
		},
		Join: []spec.JoinEq{{Left: spec.ColumnRef{Table: "a", Column: "k"}, Right: spec.ColumnRef{Table: "b", Column: "k2"}}},
	}
	e, h := loadTest(t, s)
	n, err := e.JoinSize(ctx, h)
	if err != nil || n != 4 {
		t.Fatalf("JoinSize = %d, %v; want 4", n, err)
	}
	cells, err := e.Histogram(ctx, h, []spec.ColumnRef{{Table: "a", Column: "x"}, {Table: "b", Column: "n"}}, []int{2, 5})
	if err != nil {
		t.Fatal(err)
	}
	want := []Cell{{2, 1}, {3, 1}, {4, 1}, {7, 1}}
	if !slices.Equal(cells, want) {
		t.Fatalf("Histogram = %v, want %v", cells, want)
	}
}

func TestStatisticsErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := writeCSV(t, dir, "a.csv", []string{"k", "x"}, [][]string{{"1", "p"}})
	b := writeCSV(t, dir, "b.csv", []string{"k", "y"}, [][]string{{"1", "q"}})
	c := writeCSV(t, dir, "c.csv", []string{"k"}, [][]string{{"1"}})
	cat := func(v string) spec.Column {
		return spec.Column{Name: v, Type: spec.Categorical, Values: []string{"p", "q"}}
	}
	s := &spec.Spec{
		Tables: []spec.Table{
			{Name: "a", Source: a, Columns: []spec.Column{{Name: "k", Type: spec.Key}, cat("x")}},
			{Name: "b", Source: b, Columns: []spec.Column{{Name: "k", Type: spec.Key}, cat("y")}},
			{Name: "c", Source: c, Columns: []spec.Column{{Name: "k", Type: spec.Key}}},
		},
		Join: []spec.JoinEq{
			{Left: spec.ColumnRef{Table: "a", Column: "k"}, Right: spec.ColumnRef{Table: "b", Column: "k"}},
			{Left: spec.ColumnRef{Table: "b", Column: "k"}, Right: spec.ColumnRef{Table: "c", Column: "k"}},
		},
	}
	e, h := loadTest(t, s)
	x := spec.ColumnRef{Table: "a", Column: "x"}
	for name, f := range map[string]func() error{
		"degrees of no attribute": func() error { _, err := e.Degrees(ctx, h, 0, nil); return err },
		"degrees of a non-attribute": func() error {
			_, err := e.Degrees(ctx, h, 0, []string{"x"})
			return err
		},
		"degrees of relation 7":   func() error { _, err := e.MaxDegree(ctx, h, 7, []string{"a.k"}); return err },
		"empty set":               func() error { _, err := e.MaxBoundaryCount(ctx, h, 0); return err },
		"set outside":             func() error { _, err := e.MaxBoundaryCount(ctx, h, 1<<5); return err },
		"sizes of another length": func() error { _, err := e.Histogram(ctx, h, []spec.ColumnRef{x}, []int{2, 2}); return err },
		"size too small":          func() error { _, err := e.Histogram(ctx, h, []spec.ColumnRef{x}, []int{1}); return err },
		"unknown table": func() error {
			_, err := e.Histogram(ctx, h, []spec.ColumnRef{{Table: "z", Column: "x"}}, []int{2})
			return err
		},
		"key column in histogram": func() error {
			_, err := e.Histogram(ctx, h, []spec.ColumnRef{{Table: "a", Column: "k"}}, []int{2})
			return err
		},
		"histogram of no column": func() error { _, err := e.Histogram(ctx, h, nil, nil); return err },
	} {
		if err := f(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// One attribute over all three relations, one tuple each with k = 1:
	// every set is connected and T_E = 1.
	for set := hypergraph.Set(1); set <= h.All(); set++ {
		if n, err := e.MaxBoundaryCount(ctx, h, set); err != nil || n != 1 {
			t.Errorf("T_E(%v) = %d, %v; want 1", h.Names(set), n, err)
		}
	}
	// A cancelled context stops a query.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.JoinSize(cctx, h); err == nil {
		t.Error("JoinSize with a cancelled context succeeded")
	}
	if err := e.Load(cctx, s); err == nil {
		t.Error("Load with a cancelled context succeeded")
	}
}
