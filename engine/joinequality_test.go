package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// TestJoinEqualityNegativeZero is the regression test of issue 9 §2: the
// degrees grouped join values by their text while the join compared the
// stored DOUBLEs, so with a = {0} and b = five 0 and five −0 the maximum
// degree of b was 5 while removing a's tuple changed the join by 10, and
// Alg. 1's Δ̃ undercut the sensitivity by half. Every statistic must group
// by the join's own equality: the maximum degree of b, T_{b} and the change
// of the join size must agree.
func TestJoinEqualityNegativeZero(t *testing.T) {
	forEachOpenerInPlace(t, testJoinEqualityNegativeZero)
}

func testJoinEqualityNegativeZero(t *testing.T, openTest func(testing.TB) *Engine) {
	five := func(vs ...string) [][]string {
		var rows [][]string
		for _, v := range vs {
			for range 5 {
				rows = append(rows, []string{v})
			}
		}
		return rows
	}
	numeric := spec.Column{Name: "k", Type: spec.Numeric, Min: -1, Max: 1, Bins: 2}
	clamped := spec.Column{Name: "k", Type: spec.Numeric, Min: 0, Max: 1, Bins: 2, OutOfDomain: spec.OutOfDomainClamp}
	integer := spec.Column{Name: "k", Type: spec.Integer, Min: -1, Max: 1}
	key := spec.Column{Name: "k", Type: spec.Key}
	for _, tc := range []struct {
		name    string
		col     spec.Column
		a       string     // a's one value
		b       [][]string // b's rows
		parquet string     // when set, b is read from a Parquet file written by this SELECT
		want    int64      // join change = max degree of b
		labels  []string   // b's degree labels, when checked
	}{
		{name: "numeric 0 and -0", col: numeric, a: "0", b: five("0", "-0"), want: 10, labels: []string{"0.0"}},
		{name: "numeric -0 and 0", col: numeric, a: "-0", b: five("-0", "0"), want: 10, labels: []string{"0.0"}},
		{name: "numeric spellings of zero", col: numeric, a: "0.0",
			b: five("0", "-0", "+0", "-0.0", ".0", "-0e5"), want: 30, labels: []string{"0.0"}},
		{name: "numeric 1 and 1.0", col: numeric, a: "1", b: five("1", "1.0", "+1e0", "10e-1"), want: 20, labels: []string{"1.0"}},
		{name: "numeric clamped to 0", col: clamped, a: "0", b: five("-0", "-0.5", "0"), want: 15, labels: []string{"0.0"}},
		{name: "integer 0 and -0", col: integer, a: "0", b: five("0", "-0", "-0.0", "0.0"), want: 20, labels: []string{"0"}},
		// DuckDB's Parquet writer may keep one zero per dictionary; either
		// way the value read back is stored as +0.
		{name: "parquet numeric", col: numeric, a: "0", want: 10, labels: []string{"0.0"},
			parquet: "SELECT CAST(CASE WHEN i < 5 THEN '-0' ELSE '0' END AS DOUBLE) AS k FROM range(10) t(i)"},
		{name: "parquet integer", col: integer, a: "0", want: 10, labels: []string{"0"},
			parquet: "SELECT CAST(CASE WHEN i < 5 THEN '-0' ELSE '0' END AS DOUBLE) AS k FROM range(10) t(i)"},
		// "-0" is deliberately not a canonical integer: as a key it is text
		// and joins only "-0", so b has two groups of 5 and the change is 5.
		{name: "key 0 and -0", col: key, a: "0", b: five("0", "-0"), want: 5, labels: []string{"-0", "0"}},
		{name: "key -0 and 0", col: key, a: "-0", b: five("0", "-0"), want: 5, labels: []string{"-0", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := openTest(t)
			dir := t.TempDir()
			bSrc := filepath.Join(dir, "b.parquet")
			if tc.parquet != "" {
				if _, err := duckTest(t).ExecContext(ctx, "COPY ("+tc.parquet+") TO "+e.d.str(bSrc)+" (FORMAT parquet)"); err != nil {
					t.Fatal(err)
				}
			} else {
				bSrc = writeCSV(t, dir, "b.csv", []string{"k"}, tc.b)
			}
			table := func(name, src string) spec.Table {
				return spec.Table{Name: name, Source: src, Columns: []spec.Column{tc.col}}
			}
			s := &spec.Spec{Tables: []spec.Table{
				table("a", writeCSV(t, dir, "a.csv", []string{"k"}, [][]string{{tc.a}})),
				table("a0", writeCSV(t, dir, "a0.csv", []string{"k"}, nil)), // a without its tuple
				table("b", bSrc),
			}}
			if err := e.Load(ctx, s); err != nil {
				t.Fatal(err)
			}
			graph := func(a string) *hypergraph.Hypergraph {
				h, err := hypergraph.New([]hypergraph.Relation{
					{Name: a, Attrs: map[string]string{"K": "k"}},
					{Name: "b", Attrs: map[string]string{"K": "k"}},
				})
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			h, h0 := graph("a"), graph("a0")
			with, err := e.JoinSize(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			without, err := e.JoinSize(ctx, h0)
			if err != nil {
				t.Fatal(err)
			}
			maxDeg, err := e.MaxDegree(ctx, h, 1, []string{"K"})
			if err != nil {
				t.Fatal(err)
			}
			tb, err := e.MaxBoundaryCount(ctx, h, 0b10)
			if err != nil {
				t.Fatal(err)
			}
			degs, err := e.Degrees(ctx, h, 1, []string{"K"})
			if err != nil {
				t.Fatal(err)
			}
			var labels []string
			for _, d := range degs {
				labels = append(labels, d.Values[0])
			}
			t.Logf("join change %d, MaxDegree(b) %d, T_{b} %d, degrees %v", with-without, maxDeg, tb, degs)
			if with-without != tc.want || maxDeg != tc.want || tb != tc.want {
				t.Errorf("removing a's tuple changes the join by %d; MaxDegree(b) = %d, T_{b} = %d; want all %d",
					with-without, maxDeg, tb, tc.want)
			}
			if _, pg := e.d.(postgres); pg {
				// PostgreSQL prints an integral DOUBLE without ".0".
				for i, l := range tc.labels {
					tc.labels[i] = strings.TrimSuffix(l, ".0")
				}
			}
			if !slices.Equal(labels, tc.labels) {
				t.Errorf("degree labels of b = %q, want %q", labels, tc.labels)
			}
		})
	}
}

// TestDoubleTextIsInjective checks the other half of canonicalNumber's
// argument: DuckDB prints distinct finite DOUBLEs (other than ±0) as
// distinct text, so that the text labels of degrees, and the text a join of
// mixed column types compares, never merge two values the typed join keeps
// apart. Neighbouring doubles around a few magnitudes must print
// differently and parse back exactly.
func TestDoubleTextIsInjective(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	for _, x := range []string{"0.1", "0.3", "1", "3", "1e300", "5e-324", "2.2250738585072014e-308", "9007199254740993", "-123.456"} {
		q := fmt.Sprintf(`SELECT CAST(v AS VARCHAR) AS s, CAST(CAST(v AS VARCHAR) AS DOUBLE) = v AS back
			FROM (SELECT nextafter(CAST(%[1]s AS DOUBLE), CAST('-inf' AS DOUBLE)) AS v
			UNION ALL SELECT CAST(%[1]s AS DOUBLE)
			UNION ALL SELECT nextafter(CAST(%[1]s AS DOUBLE), CAST('inf' AS DOUBLE)))`, e.d.str(x))
		rows, err := e.db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for rows.Next() {
			var s string
			var back bool
			if err := rows.Scan(&s, &back); err != nil {
				t.Fatal(err)
			}
			if seen[s] || !back {
				t.Errorf("around %s: text %q repeated or does not parse back (%v)", x, s, back)
			}
			seen[s] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
}
