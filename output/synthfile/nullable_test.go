package synthfile

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/internal/releasetest"
)

// TestWriterNullable writes random counts over a universe of nullable
// columns of every type (and one plain column) and reads the file back
// with DuckDB: every row of a cell whose bin is a column's NULL bin holds
// NULL there and every other row its bin's representative, the nullable
// columns are OPTIONAL in the schema and the plain one REQUIRED, with
// single rows (AddRow), runs (Add) and several batches.
func TestWriterNullable(t *testing.T) {
	names, cols := fixture()
	for _, c := range cols[:4] {
		c.Nullable = true // the date column stays plain
	}
	dec, err := NewDecoder(names, cols)
	if err != nil {
		t.Fatal(err)
	}
	for j, c := range cols {
		if got, want := dec.NumBins(j), int64(c.Size()); got != want || dec.NullBin(j) != c.NullCell() {
			t.Fatalf("column %s: %d bins, NULL bin %d; want %d, %d", names[j], got, dec.NullBin(j), want, c.NullCell())
		}
	}
	db := releasetest.OpenDuckDB(t)
	rng := rand.New(rand.NewPCG(36, 4))
	for _, batch := range []int{1, 7, BatchRows} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.parquet")
			w, err := newWriter(path, names, cols, testMetadata(), batch)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			// want counts the rows per text of the row.
			want := map[string]int{}
			text := func(cell int64) string {
				row, err := dec.Row(cell)
				if err != nil {
					t.Fatal(err)
				}
				parts := make([]string, len(row))
				for j, v := range row {
					parts[j] = rowText(v)
				}
				return strings.Join(parts, "|")
			}
			for cell := int64(0); cell < dec.Size(); cell++ {
				n := int64(rng.IntN(3))
				if n == 0 {
					continue
				}
				if err := w.Add(context.Background(), cell, n); err != nil {
					t.Fatal(err)
				}
				want[text(cell)] += int(n)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			rs, err := db.Query(`SELECT region, active, qty, price, day FROM read_parquet(` + releasetest.SQLString(path) + `)`)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			nulls := 0
			for rs.Next() {
				vals := make([]any, 5)
				ptrs := make([]any, 5)
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rs.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				parts := make([]string, 5)
				for j, v := range vals {
					if v == nil {
						nulls++
					}
					parts[j] = rowText(v)
				}
				got[strings.Join(parts, "|")]++
			}
			if err := rs.Err(); err != nil {
				t.Fatal(err)
			}
			rs.Close()
			if nulls == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("rows read back (%d NULL values):\n%v\nwant\n%v", nulls, got, want)
			}
			schema := map[string]string{}
			rs2, err := db.Query(`SELECT name, repetition_type FROM parquet_schema(` + releasetest.SQLString(path) + `) WHERE num_children IS NULL`)
			if err != nil {
				t.Fatal(err)
			}
			defer rs2.Close()
			for rs2.Next() {
				var n, r sql.NullString
				if err := rs2.Scan(&n, &r); err != nil {
					t.Fatal(err)
				}
				schema[n.String] = r.String
			}
			for j, n := range names {
				if want := map[bool]string{true: "OPTIONAL", false: "REQUIRED"}[cols[j].Nullable]; schema[n] != want {
					t.Errorf("column %s is %s, want %s", n, schema[n], want)
				}
			}
		})
	}
}

// rowText spells a decoded or scanned value: NULL for nil, dates as
// YYYY-MM-DD, numbers with %v.
func rowText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case interface{ Format(string) string }:
		return x.Format("2006-01-02")
	case int32:
		return fmt.Sprint(int64(x))
	}
	return fmt.Sprint(v)
}
