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
