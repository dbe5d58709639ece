package engine

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// TestNoKeyCastOutsideEngine: the packages that build SQL over private
// data outside the engine compare keys through [Engine.KeyText], never by
// casting a column to text themselves: a cast of their own is the rule
// written twice, and the copy drifts (it did: CAST … AS VARCHAR in
// relational, relational/multi and numerical while the engine cast with a
// collation on PostgreSQL). The behavioural tests — TestKeysCompareAsText
// (relational), TestContributionsKeysAsText (relational/multi),
// TestJoinPointsKeysAsText (numerical) — check that the SQL compares text.
func TestNoKeyCastOutsideEngine(t *testing.T) {
	cast := regexp.MustCompile(`(?i)\bCAST\s*\(.*\bAS\s+(VARCHAR|TEXT|STRING)\b|::\s*(VARCHAR|TEXT)\b`)
	for _, dir := range []string{"../relational", "../relational/multi", "../relational/rangeset", "../numerical"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if code, _, _ := strings.Cut(line, "//"); cast.MatchString(code) {
					t.Errorf("%s:%d casts to text itself; compare keys through engine.Engine.KeyText: %s", f, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
}

// TestKeyTextSameOnEngines: the key text of BIGINT and text key columns
// is the same on every engine, so that a join, a selection and a group
// label on keys mean the same on DuckDB and PostgreSQL.
func TestKeyTextSameOnEngines(t *testing.T) { forEachOpener(t, testKeyTextSameOnEngines) }

func testKeyTextSameOnEngines(t *testing.T, open func(testing.TB) *Engine) {
	dir := t.TempDir()
	s := &spec.Spec{Tables: []spec.Table{
		{Name: "a", Source: writeCSV(t, dir, "a.csv", []string{"k", "j"}, [][]string{{"7", "1"}, {"-12", "1"}, {"123456789012345678", "1"}, {"", "1"}}),
			Columns: []spec.Column{{Name: "k", Type: spec.Key}, {Name: "j", Type: spec.Key}}},
		{Name: "b", Source: writeCSV(t, dir, "b.csv", []string{"k"}, [][]string{{"07"}, {"Zä"}, {"a b"}, {"-0"}, {"7"}}),
			Columns: []spec.Column{{Name: "k", Type: spec.Key}}},
	}}
	e := open(t)
	ctx := context.Background()
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	var got []string
	q := "SELECT " + e.KeyText("k") + " FROM a UNION ALL SELECT " + e.KeyText("k") + " FROM b"
	if err := e.Aggregate(ctx, q, nil, func(r *sql.Rows) error {
		var v sql.NullString
		if err := r.Scan(&v); err != nil {
			return err
		}
		got = append(got, v.String+map[bool]string{false: "<null>"}[v.Valid])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"-0", "-12", "07", "123456789012345678", "7", "7", "<null>", "Zä", "a b"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("key texts %q, want %q", got, want)
	}
}

// TestStoredAsInteger: a key column whose values are all canonical
// integers (negative, 18 digits, NULL) is stored as an integer, one holding
// a leading zero, a 19-digit number or a letter is not, whatever the source
// (CSV text; Parquet INTEGER or VARCHAR read in place); a column that is not
// loaded is an error naming it. relational joins two keys as stored only
// when both answer true (TestKeysNativeEqualsText).
func TestStoredAsInteger(t *testing.T) {
	forEachOpenerInPlace(t, func(t *testing.T, open func(testing.TB) *Engine) {
		dir := t.TempDir()
		pq := func(name, sel string) string {
			f := filepath.Join(dir, name)
			if _, err := duckTest(t).Exec("COPY (" + sel + ") TO '" + f + "' (FORMAT PARQUET)"); err != nil {
				t.Fatal(err)
			}
			return f
		}
		s := &spec.Spec{Tables: []spec.Table{
			{Name: "a", Source: writeCSV(t, dir, "a.csv", []string{"k", "z", "b", "l", "x"}, [][]string{
				{"7", "07", "1234567890123456789", "C7", "1"}, {"-999999999999999999", "7", "7", "7", "2"}, {"", "", "", "", "3"}}),
				Columns: []spec.Column{{Name: "k", Type: spec.Key}, {Name: "z", Type: spec.Key}, {Name: "b", Type: spec.Key}, {Name: "l", Type: spec.Key},
					{Name: "x", Type: spec.Integer, Min: 0, Max: 5}}},
			{Name: "p", Source: pq("p.parquet", "SELECT CAST(i AS INTEGER) AS k, CASE WHEN i = 2 THEN '07' ELSE CAST(i AS VARCHAR) END AS z FROM range(3) t(i)"),
				Columns: []spec.Column{{Name: "k", Type: spec.Key}, {Name: "z", Type: spec.Key}}},
		}}
		e := open(t)
		ctx := context.Background()
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			table, column string
			want          bool
		}{
			{"a", "k", true}, {"a", "z", false}, {"a", "b", false}, {"a", "l", false}, {"p", "k", true}, {"p", "z", false},
		} {
			got, err := e.StoredAsInteger(ctx, c.table, c.column)
			if err != nil || got != c.want {
				t.Errorf("%s.%s: StoredAsInteger = %v, %v; want %v", c.table, c.column, got, err, c.want)
			}
		}
		if _, err := e.StoredAsInteger(ctx, "a", "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("a missing column: %v, want an error naming it", err)
		}
	})
}
