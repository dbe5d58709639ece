package engine

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/synth-dp/synth/spec"
)

// KeyColumnType is the type of one join key column of a loaded table, for
// the custodian's diagnostics (`synth inspect`): how the load stored it
// and the column's type in its source file.
type KeyColumnType struct {
	// Table and Column name the spec's column.
	Table, Column string
	// Stored is the loaded column's SQL type, upper case: BIGINT when every
	// value is a canonical integer, text (VARCHAR, TEXT) otherwise — a
	// choice that depends on the data (see [Engine.Load]).
	Stored string
	// Source is the column's type in its source file: Parquet's (BIGINT,
	// DOUBLE, VARCHAR, …), or "CSV text" for a CSV file, which holds text
	// only.
	Source string
}

// KeyColumnTypes returns the types of the key columns of s's tables that
// a join equality names, in table order, for a spec that [Engine.Load]
// loaded. It reads the loaded tables' schemas and the Parquet files'
// schemas, no row.
func (e *Engine) KeyColumnTypes(ctx context.Context, s *spec.Spec) ([]KeyColumnType, error) {
	joined := map[spec.ColumnRef]bool{}
	for _, eq := range s.Join {
		joined[eq.Left], joined[eq.Right] = true, true
	}
	var out []KeyColumnType
	for i := range s.Tables {
		t := &s.Tables[i]
		var keys []string
		for _, c := range t.Columns {
			if c.Type == spec.Key && joined[spec.ColumnRef{Table: t.Name, Column: c.Name}] {
				keys = append(keys, c.Name)
			}
		}
		if len(keys) == 0 {
			continue
		}
		stored, err := e.columnTypes(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		source := map[string]string{}
		if format(t) == "parquet" {
			if source, err = parquetTypes(ctx, t); err != nil {
				return nil, err
			}
		}
		for _, k := range keys {
			kt := KeyColumnType{Table: t.Name, Column: k, Stored: stored[k], Source: "CSV text"}
			if format(t) == "parquet" {
				kt.Source = source[k]
			}
			out = append(out, kt)
		}
	}
	return out, nil
}

// parquetTypes returns the column types of t's Parquet file, read by an
// embedded DuckDB of its own (whatever the engine), from the file's
// schema.
func parquetTypes(ctx context.Context, t *spec.Table) (map[string]string, error) {
	conn, err := duckdb.NewConnector("?"+duckDBOptions, nil)
	if err != nil {
		return nil, fmt.Errorf("engine: table %s: opening DuckDB to read Parquet: %w", t.Name, err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	return fileColumns(ctx, db, duckDB{}, t)
}

// KeyTypeWarnings warns, for every join equality, when its two key
// columns were stored with different types (BIGINT: every value a
// canonical integer; text: some value is not) or have different types in
// their source files, naming both columns and types. The stored types
// depend on the data: the warnings are for the data custodian (inspect's
// NON-PRIVATE section, a release's log), never for publication.
func KeyTypeWarnings(s *spec.Spec, types []KeyColumnType) []string {
	of := map[spec.ColumnRef]KeyColumnType{}
	for _, t := range types {
		of[spec.ColumnRef{Table: t.Table, Column: t.Column}] = t
	}
	var out []string
	for _, eq := range s.Join {
		l, lok := of[eq.Left]
		r, rok := of[eq.Right]
		if !lok || !rok {
			continue
		}
		if l.Stored != r.Stored {
			out = append(out, fmt.Sprintf("join key types differ across %s = %s: %s is stored as %s and %s as %s (%s): keys compare as text, "+
				"so only values written the same way join", eq.Left, eq.Right, eq.Left, storedType(l.Stored), eq.Right, storedType(r.Stored),
				"BIGINT when every value is an integer written canonically, text when some value is not, such as 07, 7.5 or C7"))
		}
		if l.Source != r.Source {
			out = append(out, fmt.Sprintf("join key file types differ across %s = %s: %s is %s in its source file and %s is %s "+
				"(integral numbers such as 7.0 join 7; any other spelling joins only itself)", eq.Left, eq.Right, eq.Left, l.Source, eq.Right, r.Source))
		}
	}
	return out
}

// storedType names a stored key type for the custodian.
func storedType(t string) string {
	if t == "BIGINT" {
		return "BIGINT"
	}
	return "text (" + t + ")"
}
