// Package tablestest writes tables releases in the output contract of a
// tables release (docs/relational-eval.md) from binned tables
// ([score.Tables]): the true tables copied (the evaluator's zero), the same
// with a column shuffled or children reassigned (what the evaluator must
// tell apart), and the by-hand baseline of issue 37 ([Baseline]). It is
// for tests and the evaluation harness; nothing here is a release.
//
// # Contract written
//
// DIR/tables/<table>.parquet for every table of the ownership tree: its
// primary key columns (int64; a key column that is also the foreign key
// holds the parent's key, the others a row number — within the parent when
// the key holds the foreign key, else in the table), its foreign key
// columns to its parent (int64, the parent's synthetic key), and its
// released columns under their flat-file names, each bin written as its
// representative value ([synthfile.Decoder.Value]) with the flat file's
// type. DIR/synthetic.parquet is the join of the tables over the released
// columns.
package tablestest

import (
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the DuckDB driver

	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/spec"
)

func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlType is the DuckDB type of a released column in the flat file.
func sqlType(t spec.ColumnType) string {
	switch t {
	case spec.Boolean:
		return "BOOLEAN"
	case spec.Integer:
		return "BIGINT"
	case spec.Numeric:
		return "DOUBLE"
	case spec.Date:
		return "DATE"
	}
	return "VARCHAR"
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return "" // the NULL of a nullable column: an empty CSV field
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		return x.Format(time.DateOnly)
	}
	panic(fmt.Sprintf("tablestest: value %v of type %T", v, v))
}

// Write writes ts as a tables release into dir (created if needed): the
// table files and the flat join synthetic.parquet (see the package doc).
func Write(ctx context.Context, dir string, s *spec.Spec, ts *score.Tables) error {
	names := layout.ColumnNames(s)
	dec, err := synthfile.NewDecoder(names, s.ReleaseColumns())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, score.TablesDir), 0o755); err != nil {
		return err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	tr := ts.Tree
	keys := map[string][][]int64{} // table -> each row's primary key values
	for _, e := range ts.Tables {
		edge, hasParent := tr.ParentEdge(e.Table)
		pk := s.Table(e.Table).PrimaryKey
		// Key columns: the primary key's, then the foreign key's others.
		keyCols := slices.Clone(pk)
		for _, c := range edge.FK {
			if !slices.Contains(keyCols, c) {
				keyCols = append(keyCols, c)
			}
		}
		inParent := false
		for _, c := range pk {
			inParent = inParent || slices.Contains(edge.FK, c)
		}
		rowKeys := make([][]int64, len(e.Rows))
		within := map[int]int64{}
		header := slices.Clone(keyCols)
		for _, p := range e.Cols {
			header = append(header, names[p])
		}
		tmp := filepath.Join(dir, score.TablesDir, e.Table+".csv.tmp")
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		w := csv.NewWriter(f)
		if err := w.Write(header); err != nil {
			f.Close()
			return err
		}
		rec := make([]string, len(header))
		for i, r := range e.Rows {
			var parentKey []int64
			if hasParent {
				parentKey = keys[edge.Parent][e.Parent[i]]
			}
			own := int64(i + 1)
			if inParent {
				within[e.Parent[i]]++
				own = within[e.Parent[i]]
			}
			vals := make([]int64, len(keyCols))
			for j, c := range keyCols {
				if k := slices.Index(edge.FK, c); k >= 0 {
					vals[j] = parentKey[slices.Index(s.Table(edge.Parent).PrimaryKey, edge.PK[k])]
				} else {
					vals[j] = own
				}
				rec[j] = strconv.FormatInt(vals[j], 10)
			}
			rowKeys[i] = vals[:len(pk)]
			for j, p := range e.Cols {
				rec[len(keyCols)+j] = text(dec.Value(p, r[j]))
			}
			if err := w.Write(rec); err != nil {
				f.Close()
				return err
			}
		}
		w.Flush()
		if err := w.Error(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		keys[e.Table] = rowKeys
		var sel []string
		for _, c := range keyCols {
			sel = append(sel, "CAST("+ident(c)+" AS BIGINT) AS "+ident(c))
		}
		for _, p := range e.Cols {
			sel = append(sel, "CAST("+ident(names[p])+" AS "+sqlType(dec.Type(p))+") AS "+ident(names[p]))
		}
		q := "COPY (SELECT " + strings.Join(sel, ", ") + " FROM read_csv(" + quote(tmp) + ", header = true, all_varchar = true)) TO " +
			quote(score.TablePath(dir, e.Table)) + " (FORMAT parquet)"
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("tablestest: %s: %w", e.Table, err)
		}
		if err := os.Remove(tmp); err != nil {
			return err
		}
	}
	// The flat join of the tables over the released columns.
	var from, sel []string
	for _, t := range tr.Tables {
		from = append(from, "read_parquet("+quote(score.TablePath(dir, t))+") AS "+ident(t))
	}
	var where []string
	for _, e := range tr.Edges {
		for k := range e.FK {
			where = append(where, ident(e.Child)+"."+ident(e.FK[k])+" = "+ident(e.Parent)+"."+ident(e.PK[k]))
		}
	}
	for _, t := range tr.Tables {
		for _, p := range tr.Columns[t] {
			sel = append(sel, ident(t)+"."+ident(names[p]))
		}
	}
	q := "COPY (SELECT " + strings.Join(sel, ", ") + " FROM " + strings.Join(from, ", ") + " WHERE " + strings.Join(where, " AND ") +
		") TO " + quote(filepath.Join(dir, layout.ParquetName)) + " (FORMAT parquet)"
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("tablestest: flat join: %w", err)
	}
	return nil
}
