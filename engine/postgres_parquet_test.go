package engine

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// TestPostgresParquetBatches loads Parquet files through the PostgreSQL
// engine's batched reader with batches of 64 rows — 1,000 rows (a short
// last batch) and 1,024 (an empty last batch), in row groups of 100 that
// do not line up with the batches — and checks that the rows, their
// numbers, keys, values and cells equal the DuckDB engine's.
func TestPostgresParquetBatches(t *testing.T) {
	postgresURL(t)
	old := parquetBatchRows
	parquetBatchRows = 64
	t.Cleanup(func() { parquetBatchRows = old })
	for _, n := range []int{1000, 1024} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "v.parquet")
			q := fmt.Sprintf(`COPY (SELECT i AS k, ['a', 'b', 'c'][i %% 3 + 1] AS c, i %% 50 AS x, DATE '2020-01-01' + CAST(i %% 400 AS INTEGER) AS d
				FROM range(%d) t(i)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 100)`, n, src)
			if _, err := duckTest(t).Exec(q); err != nil {
				t.Fatal(err)
			}
			s := &spec.Spec{Tables: []spec.Table{{Name: "v", Source: src, Format: "parquet", Columns: []spec.Column{
				{Name: "k", Type: spec.Key},
				{Name: "c", Type: spec.Categorical, Values: []string{"a", "b", "c"}},
				{Name: "x", Type: spec.Integer, Min: 0, Max: 49, Bins: 5},
				{Name: "d", Type: spec.Date, DateMin: day("2020-01-01"), DateMax: day("2021-12-31"), Granularity: spec.Month},
			}}}}
			var got [2][]string
			for k, e := range []*Engine{openTest(t), openPostgresTest(t)} {
				if err := e.Load(context.Background(), s); err != nil {
					t.Fatal(err)
				}
				q := `SELECT CAST("_synth_row" AS BIGINT), CAST("k" AS BIGINT), ` + e.d.toText(e.d.ident("c")) + `, CAST("x" AS BIGINT), ` +
					e.d.toText(e.d.ident("d"))
				for _, c := range []string{"c", "x", "d"} {
					q += ", CAST(" + e.d.ident(BinColumn(c)) + " AS BIGINT)"
				}
				rs, err := e.db.Query(q + ` FROM "v" ORDER BY 1`)
				if err != nil {
					t.Fatal(err)
				}
				for rs.Next() {
					v := make([]sql.NullString, 8)
					p := make([]any, len(v))
					for i := range v {
						p[i] = &v[i]
					}
					if err := rs.Scan(p...); err != nil {
						t.Fatal(err)
					}
					got[k] = append(got[k], fmt.Sprint(v))
				}
				if err := rs.Err(); err != nil {
					t.Fatal(err)
				}
				rs.Close()
			}
			if len(got[1]) != n || !slices.Equal(got[0], got[1]) {
				t.Fatalf("%d rows on PostgreSQL, %d on DuckDB; first differing: %v", len(got[1]), len(got[0]), firstRowDiff(got[0], got[1]))
			}
		})
	}
}

// firstRowDiff returns the first row where a and b differ, as "a | b".
func firstRowDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " | " + b[i]
		}
	}
	return fmt.Sprintf("(lengths %d and %d)", len(a), len(b))
}
