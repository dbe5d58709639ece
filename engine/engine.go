package engine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	// The DuckDB driver registers itself as "duckdb" with database/sql.
	_ "github.com/duckdb/duckdb-go/v2"
)

// duckDBOptions keep DuckDB off the network (no extension is installed or
// loaded behind our back) and keep the file order of scans, which the row
// numbers of CSV errors rely on.
const duckDBOptions = "autoinstall_known_extensions=false&autoload_known_extensions=false&preserve_insertion_order=true"

// Engine is a connection to a SQL engine holding the loaded tables. It is
// safe for concurrent use by several goroutines, but [Engine.Load] must not
// run while statistics are computed over the tables it replaces.
type Engine struct {
	db *sql.DB
	d  dialect

	mu     sync.Mutex
	tables map[string]map[string]string // table -> column -> SQL type, cached
	sizes  map[string]map[string]int    // table -> non-key column -> declared Size(), from Load
}

// Open connects to an engine. The DSN is "" or "duckdb" for an in-memory
// DuckDB database, or "duckdb:PATH" for a DuckDB database file (created when
// missing). Any other scheme returns an error wrapping [ErrUnsupported].
func Open(ctx context.Context, dsn string) (*Engine, error) {
	scheme, rest, hasRest := strings.Cut(dsn, ":")
	if dsn == "" {
		scheme = "duckdb"
	}
	if scheme != "duckdb" {
		return nil, fmt.Errorf("engine: open %q: scheme %q: %w (only duckdb is available)", dsn, scheme, ErrUnsupported)
	}
	path := ""
	if hasRest {
		path = rest
	}
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("engine: open %q: options in the DSN: %w", dsn, ErrUnsupported)
	}
	db, err := sql.Open("duckdb", path+"?"+duckDBOptions)
	if err != nil {
		return nil, fmt.Errorf("engine: open %q: %w", dsn, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("engine: open %q: %w", dsn, err)
	}
	return &Engine{db: db, d: duckDB{}, tables: map[string]map[string]string{}, sizes: map[string]map[string]int{}}, nil
}

// Close closes the connection. An in-memory database is discarded.
func (e *Engine) Close() error {
	if err := e.db.Close(); err != nil {
		return fmt.Errorf("engine: close: %w", err)
	}
	return nil
}

// columnTypes returns the columns of an engine table and their SQL types,
// upper case.
func (e *Engine) columnTypes(ctx context.Context, table string) (map[string]string, error) {
	e.mu.Lock()
	cols, ok := e.tables[table]
	e.mu.Unlock()
	if ok {
		return cols, nil
	}
	rows, err := e.db.QueryContext(ctx,
		"SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? AND table_schema = current_schema()", table)
	if err != nil {
		return nil, fmt.Errorf("engine: columns of table %q: %w", table, err)
	}
	defer rows.Close()
	cols = map[string]string{}
	for rows.Next() {
		var c, t string
		if err := rows.Scan(&c, &t); err != nil {
			return nil, fmt.Errorf("engine: columns of table %q: %w", table, err)
		}
		cols[c] = strings.ToUpper(t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("engine: columns of table %q: %w", table, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("engine: no table %q (load it first)", table)
	}
	e.mu.Lock()
	e.tables[table] = cols
	e.mu.Unlock()
	return cols, nil
}

// declaredSize returns the declared domain size of a column loaded by
// [Engine.Load], and whether it is known.
func (e *Engine) declaredSize(table, column string) (int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.sizes[table][column]
	return n, ok
}

// forget drops cached column types.
func (e *Engine) forget(tables ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range tables {
		delete(e.tables, t)
	}
}
