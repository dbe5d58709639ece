package engine

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	duckdb "github.com/duckdb/duckdb-go/v2"
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
	// schema is the engine's own schema, holding every table and view it
	// creates (see [Open]).
	schema string

	mu     sync.Mutex
	closed bool
	tables map[string]map[string]string // table -> column -> SQL type, cached
	sizes  map[string]map[string]int    // table -> non-key column -> declared Size(), from Load
	// keys maps a loaded table or derived view to its declared primary key
	// (public, from the spec; see [Engine.declareKeys]).
	keys map[string][]string
	// data maps a loaded table's name, in lower case, to the table holding
	// its rows when the engine table is a view of it (DuckDB; see
	// [Engine.loadScanned]); loads numbers the loads, naming their tables.
	data  map[string]string
	loads int64
	// threadsMu serialises [Engine.onOneThread]'s changes of DuckDB's
	// threads.
	threadsMu sync.Mutex
	// temps numbers the short-lived tables of statistics ([Engine.tempName]).
	temps atomic.Int64
	// passed holds the key checks that passed since the last load (their
	// statements; see [Engine.checkPassed]).
	passed map[string]bool
	// counts are the stored child counts of fan-out edges
	// ([Engine.childCountTable]).
	counts map[Hop]string
	// inPlace makes Load read Parquet sources straight from the files
	// instead of storing them in data tables (see [Engine.ReadInPlace]).
	inPlace bool
	// onTable hears of each table loaded (see [Engine.OnTableLoaded]).
	onTable func(k, n int)
	// scratch is an embedded engine's temporary folder, removed by Close;
	// tempDB is set when the database file is in it.
	scratch *duckDBScratch
	tempDB  bool

	// release, when set, frees what the engine holds besides db once the
	// schema is dropped (the PostgreSQL engine's lock connection and SQL
	// parser).
	release func()
	// parseOnce opens parseDB, the SQL parser of a non-DuckDB engine
	// ([Engine.parser]); parseErr is why it could not be opened.
	parseOnce sync.Once
	parseDB   *sql.DB
	parseErr  error
}

// Open connects to an engine. The DSN is "" or "duckdb" for an embedded
// DuckDB database in a temporary file, "duckdb:PATH" for a DuckDB database
// file (created when missing; "duckdb::memory:" keeps the database in
// memory), or a PostgreSQL URL "postgres://…" or "postgresql://…" (see
// [openPostgres] for what synth does on the server). Any other scheme
// returns an error wrapping [ErrUnsupported].
//
// An embedded engine's memory is bounded: DuckDB's memory_limit is
// [MemoryLimitEnv] ([DefaultMemoryLimit] when unset), and what does not
// fit spills to a private folder in [os.TempDir] (mode 0700), which holds
// the database file of the default DSN too and which [Engine.Close]
// removes. The default DSN's file holds the loaded tables, compressed, so
// that the memory synth needs does not grow with the data: DuckDB reads
// the blocks it needs through its buffers. A crash leaves the folder
// (synth-duckdb-* in the temporary directory, e.g. /tmp), with the private
// rows in it; on Unix the next Open removes it (the folder of a process
// that no longer runs and whose lock nobody holds), elsewhere remove it
// by hand.
//
// Everything the engine creates — the loaded tables, the views of [Engine.Fold]
// and [Buckets], the tables of [Buckets] — lives in a schema of its own,
// named [WorkSchemaPrefix] followed by 16 random hexadecimal digits, which
// every connection of the engine uses as its only schema (SET schema): no
// name the engine creates can collide with, replace or read an object of
// the database file, whose own tables are never touched. The tables
// holding the loaded rows are in that schema too; the text staging tables
// of [Engine.Load]'s error path are TEMP tables. [Engine.Close] drops the
// schema.
//
// After a crash (the process killed before Close) the schema and the
// private rows in it stay in the file. The next Open of that file drops
// every schema that is recognisably a left-over of synth: named
// [WorkSchemaPrefix] + 16 hexadecimal digits, holding the marker table
// [WorkSchemaPrefix]+"owner", and not in use by an engine of this process.
// A DuckDB file can be opened for writing by one process only, so no
// other process can be using it. DuckDB does not zero the blocks that a
// dropped table occupied: bytes of private rows can remain in unused
// blocks of the file until they are reused; treat a file given to
// --engine duckdb:PATH as holding private data.
func Open(ctx context.Context, dsn string) (*Engine, error) {
	scheme, rest, hasRest := strings.Cut(dsn, ":")
	if dsn == "" {
		scheme = "duckdb"
	}
	if scheme == "postgres" || scheme == "postgresql" {
		return openPostgres(ctx, dsn)
	}
	if scheme != "duckdb" {
		return nil, fmt.Errorf("engine: open %q: scheme %q: %w (duckdb or postgres)", redact(dsn), scheme, ErrUnsupported)
	}
	path := ""
	if hasRest {
		path = rest
	}
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("engine: open %q: options in the DSN: %w", dsn, ErrUnsupported)
	}
	limit, err := memoryLimit()
	if err != nil {
		return nil, fmt.Errorf("engine: open %q: %w", dsn, err)
	}
	if _, err := threads(); err != nil {
		return nil, fmt.Errorf("engine: open %q: %w", dsn, err)
	}
	// A database file given in the DSN spills next to itself (DuckDB's
	// PATH.tmp; two engines on one file must have the same options); the
	// default database and an in-memory one get a private folder.
	var scratch *duckDBScratch
	spill := ""
	if path == "" || path == ":memory:" {
		if scratch, err = newDuckDBScratch(); err != nil {
			return nil, fmt.Errorf("engine: open %q: %w", dsn, err)
		}
		spill = scratch.spill()
		if path == "" {
			path = scratch.database()
		}
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		scratch.remove()
		return nil, fmt.Errorf("engine: open %q: %w", dsn, err)
	}
	d := duckDB{}
	schema := WorkSchemaPrefix + hex.EncodeToString(rnd[:])
	// Every connection of the pool creates the schema if needed (the first
	// one does) and makes it the only schema its unqualified names resolve
	// to; TEMP objects still resolve first.
	init := func(ex driver.ExecerContext) error {
		for _, q := range []string{
			"CREATE SCHEMA IF NOT EXISTS " + d.ident(schema),
			"SET schema = " + d.str(schema),
		} {
			if _, err := ex.ExecContext(context.Background(), q, nil); err != nil {
				return err
			}
		}
		return nil
	}
	conn, err := duckdb.NewConnector(path+"?"+duckDBConfig(spill, limit), init)
	if err != nil {
		scratch.remove()
		return nil, fmt.Errorf("engine: open %q: %w", dsn, err)
	}
	db := sql.OpenDB(conn) // closes conn when closed
	liveSchemas.Lock()
	liveSchemas.m[schema] = true
	liveSchemas.Unlock()
	e := &Engine{db: db, d: d, schema: schema, tables: map[string]map[string]string{}, sizes: map[string]map[string]int{},
		scratch: scratch, tempDB: scratch != nil && path == scratch.database()}
	fail := func(err error) (*Engine, error) {
		e.Close()
		return nil, fmt.Errorf("engine: open %q: %w", dsn, err)
	}
	if err := db.PingContext(ctx); err != nil {
		return fail(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+d.ident(ownerTable)+" (owner VARCHAR)"); err != nil {
		return fail(err)
	}
	if err := e.dropStale(ctx); err != nil {
		return fail(err)
	}
	return e, nil
}

// WorkSchemaPrefix starts the name of the schema an [Engine] keeps its
// tables and views in.
const WorkSchemaPrefix = ReservedPrefix + "work_"

// ownerTable marks a schema as an engine's work schema.
const ownerTable = WorkSchemaPrefix + "owner"

// workSchemaRE matches the names of work schemas.
var workSchemaRE = regexp.MustCompile("^" + regexp.QuoteMeta(WorkSchemaPrefix) + "[0-9a-f]{16}$")

// liveSchemas are the work schemas of the open engines of this process:
// two engines on one database file share it (the driver caches the
// database instance), and neither may take the other's schema for a
// left-over.
var liveSchemas = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// dropStale drops the work schemas a crashed engine left in the database.
func (e *Engine) dropStale(ctx context.Context) error {
	rows, err := e.db.QueryContext(ctx,
		"SELECT DISTINCT table_schema FROM information_schema.tables WHERE table_catalog = current_database() AND table_name = $1", ownerTable)
	if err != nil {
		return fmt.Errorf("listing left-over work schemas: %w", err)
	}
	var stale []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return fmt.Errorf("listing left-over work schemas: %w", err)
		}
		stale = append(stale, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("listing left-over work schemas: %w", err)
	}
	liveSchemas.Lock()
	defer liveSchemas.Unlock()
	for _, s := range stale {
		if !workSchemaRE.MatchString(s) || liveSchemas.m[s] {
			continue
		}
		if _, err := e.db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+e.d.ident(s)+" CASCADE"); err != nil {
			return fmt.Errorf("dropping the left-over work schema %s: %w", s, err)
		}
	}
	return nil
}

// Close drops the engine's schema with everything in it and closes the
// connection. An in-memory database is discarded. Closing again does
// nothing.
func (e *Engine) Close() error {
	e.mu.Lock()
	closed := e.closed
	e.closed = true
	e.mu.Unlock()
	if closed {
		return nil
	}
	ctx := context.Background()
	_, err := e.db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+e.d.ident(e.schema)+" CASCADE")
	if cp := e.d.checkpoint(); err == nil && cp != "" && !e.tempDB {
		// Write the drop to the file now rather than leave it in the WAL.
		_, err = e.db.ExecContext(ctx, cp)
	}
	if e.release != nil {
		e.release()
	}
	liveSchemas.Lock()
	delete(liveSchemas.m, e.schema)
	liveSchemas.Unlock()
	if cerr := e.db.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if e.scratch != nil {
		if rerr := e.scratch.remove(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
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
	q := "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 AND table_schema = current_schema() AND table_catalog = current_database()"
	if _, ok := e.d.(duckDB); ok {
		// DuckDB's information_schema.columns is a view of duckdb_columns()
		// (the same names and types, views' columns included) that costs
		// about 2.5 ms of CPU more a query; this runs after every Load.
		q = "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = $1 AND schema_name = current_schema() AND database_name = current_database()"
	}
	rows, err := e.db.QueryContext(ctx, q, table)
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
		for h := range e.counts {
			if h.Child == t {
				delete(e.counts, h) // its table goes with the schema at Close
			}
		}
	}
}
