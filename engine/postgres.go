package engine

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/synth-dp/synth/spec"
)

// openPostgres connects to a PostgreSQL server (version 13 or later; 15 is
// tested) given by a URL, postgres://user:password@host:port/database?….
//
// What synth does on the server: it creates a schema of its own, named
// [WorkSchemaPrefix] followed by 16 random hexadecimal digits, holding every
// table, view and function it creates, and makes it the only schema of its
// connections (search_path); it needs the CREATE privilege on the database.
// Sources are read in this process and streamed with COPY FROM STDIN into
// TEMP staging tables (CSV through encoding/csv, Parquet through an
// in-memory DuckDB that only reads the file): the server needs no access to
// the files. [Engine.Close] drops the schema.
//
// The engine holds a session-level advisory lock keyed by its schema's
// random digits for as long as it is open. After a crash the schema stays
// on the server; the next Open on the same database drops every schema that
// is recognisably a left-over of synth (named [WorkSchemaPrefix] + 16
// hexadecimal digits and holding the marker table) and whose lock no live
// session holds — the schemas of engines still running elsewhere are left
// alone. Like any PostgreSQL table, dropped private rows stay in the
// server's files until their space is reused or vacuumed.
//
// With the URL parameter [ShardsParam] the engine spreads the loaded
// relations over foreign servers of the coordinator it connects to (a
// sharded cluster: see shardedPostgres).
func openPostgres(ctx context.Context, dsn string) (*Engine, error) {
	fail := func(err error) (*Engine, error) {
		return nil, fmt.Errorf("engine: open %q: %w", redact(dsn), err)
	}
	conn, shards, err := splitShards(dsn)
	if err != nil {
		return fail(err)
	}
	cfg, err := pgx.ParseConfig(conn)
	if err != nil {
		return fail(errors.New("not a valid PostgreSQL URL"))
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fail(err)
	}
	d := postgres{}
	schema := WorkSchemaPrefix + hex.EncodeToString(rnd[:])
	cfg.RuntimeParams["search_path"] = d.ident(schema)
	// Session settings for synth's queries, unless the URL sets them: JIT
	// compilation of the load's long CASE expressions costs seconds per
	// statement and saves little on scans; the aggregates of the
	// statistics fit in memory instead of spilling.
	for k, v := range pgSession {
		if _, ok := cfg.RuntimeParams[k]; !ok {
			cfg.RuntimeParams[k] = v
		}
	}
	if shards != nil {
		for k, v := range shardSession {
			if _, ok := cfg.RuntimeParams[k]; !ok {
				cfg.RuntimeParams[k] = v
			}
		}
	}
	// The simple protocol: several statements in one Exec (the dialect's
	// replace statements), and no server-side prepared statement that a
	// dropped and re-created table would invalidate.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	db := sql.OpenDB(stdlib.GetConnector(*cfg))
	e := &Engine{db: db, d: d, schema: schema, tables: map[string]map[string]string{}, sizes: map[string]map[string]int{}}
	liveSchemas.Lock()
	liveSchemas.m[schema] = true
	liveSchemas.Unlock()
	closeFail := func(err error) (*Engine, error) {
		e.Close()
		return fail(err)
	}
	lock, err := db.Conn(ctx)
	if err != nil {
		return closeFail(err)
	}
	e.release = func() {
		lock.ExecContext(context.Background(), "SELECT pg_advisory_unlock_all()")
		lock.Close()
	}
	if _, err := lock.ExecContext(ctx, fmt.Sprintf("SELECT pg_advisory_lock(%d)", schemaLockKey(rnd))); err != nil {
		return closeFail(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+d.ident(schema)+"; "+
		"CREATE TABLE IF NOT EXISTS "+d.ident(schema)+"."+d.ident(ownerTable)+" (owner TEXT); "+
		pgTryFloat8); err != nil {
		return closeFail(err)
	}
	if err := e.dropStalePostgres(ctx); err != nil {
		return closeFail(err)
	}
	if shards != nil {
		// A sharded cluster (see shardedPostgres): the engine's schema on
		// the shards is dropped at Close, before the lock is released.
		sd, err := openShards(ctx, db, schema, shards)
		if err != nil {
			return closeFail(err)
		}
		e.d = sd
		unlock := e.release
		e.release = func() {
			if err := sd.dropRemote(context.Background()); err != nil {
				// The next Open on this coordinator drops it (dropStaleRemote).
				slog.Warn("engine: close: could not drop the work schema on the shards", "schema", schema, "err", err)
			}
			unlock()
		}
		if err := sd.dropStaleRemote(ctx); err != nil {
			return closeFail(err)
		}
	}
	return e, nil
}

// pgSession are the session settings [openPostgres] gives its
// connections unless the URL sets them (e.g. ?work_mem=1GB).
var pgSession = map[string]string{"jit": "off", "work_mem": "256MB"}

// schemaLockKey is the advisory lock key of a work schema: its 64 random
// bits.
func schemaLockKey(rnd [8]byte) int64 { return int64(binary.BigEndian.Uint64(rnd[:])) }

// Redact returns an engine DSN fit for logs and messages: a URL's password
// replaced by "xxxxx".
func Redact(dsn string) string { return redact(dsn) }

// redact is a DSN with its password replaced, fit for messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		if strings.Contains(dsn, "@") || strings.Contains(dsn, "password") {
			return "(a DSN that does not parse)"
		}
		return dsn
	}
	return u.Redacted()
}

// dropStalePostgres drops the work schemas that crashed engines left on the
// server: those whose advisory lock is free.
func (e *Engine) dropStalePostgres(ctx context.Context) error {
	rows, err := e.db.QueryContext(ctx,
		"SELECT DISTINCT table_schema FROM information_schema.tables WHERE table_catalog = current_database() AND table_name = "+e.d.str(ownerTable))
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
	for _, s := range stale {
		liveSchemas.Lock()
		live := liveSchemas.m[s]
		liveSchemas.Unlock()
		if !workSchemaRE.MatchString(s) || live {
			continue
		}
		var rnd [8]byte
		if _, err := hex.Decode(rnd[:], []byte(strings.TrimPrefix(s, WorkSchemaPrefix))); err != nil {
			continue
		}
		if err := e.dropIfUnlocked(ctx, s, schemaLockKey(rnd)); err != nil {
			return fmt.Errorf("dropping the left-over work schema %s: %w", s, err)
		}
	}
	return nil
}

// dropIfUnlocked drops schema s when no session holds its lock, holding
// the lock meanwhile so that no engine can open it.
func (e *Engine) dropIfUnlocked(ctx context.Context, s string, key int64) error {
	return withAdvisoryLock(ctx, e.db, key, func(conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+e.d.ident(s)+" CASCADE")
		return err
	})
}

// withAdvisoryLock runs f on a connection holding the advisory lock key
// when no other session holds it (a live engine), and does nothing
// otherwise; the lock is released when f returns.
func withAdvisoryLock(ctx context.Context, db *sql.DB, key int64, f func(*sql.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var got bool
	if err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT pg_try_advisory_lock(%d)", key)).Scan(&got); err != nil {
		return err
	}
	if !got {
		return nil // a live engine elsewhere
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("SELECT pg_advisory_unlock(%d)", key))
	return f(conn)
}

// pgTryFloat8 creates the work schema's function converting text to a
// DOUBLE PRECISION as DuckDB's TRY_CAST does: PostgreSQL refuses a value
// out of range, DuckDB rounds it to ±Infinity (overflow) or ±0
// (underflow), and so does this function, deciding which through NUMERIC
// (or, beyond NUMERIC's range, the exponent's sign). It runs only on text
// matching numberRE that is long or has an exponent: shorter plain
// decimals cannot be out of range and are cast inline (see
// postgres.toDouble).
const pgTryFloat8 = `CREATE OR REPLACE FUNCTION ` + ReservedPrefix + `try_float8(t TEXT) RETURNS DOUBLE PRECISION
LANGUAGE plpgsql IMMUTABLE STRICT AS $f$
DECLARE
  neg BOOLEAN := left(t, 1) = '-';
  big BOOLEAN;
BEGIN
  RETURN CAST(t AS DOUBLE PRECISION);
EXCEPTION WHEN others THEN
  BEGIN
    big := abs(CAST(t AS NUMERIC)) >= 1;
  EXCEPTION WHEN others THEN
    big := t !~ '[eE]-';
  END;
  IF big THEN
    RETURN CASE WHEN neg THEN CAST('-Infinity' AS DOUBLE PRECISION) ELSE CAST('Infinity' AS DOUBLE PRECISION) END;
  END IF;
  RETURN CASE WHEN neg THEN CAST('-0' AS DOUBLE PRECISION) ELSE CAST(0 AS DOUBLE PRECISION) END;
END
$f$`

// postgres is the [dialect] of PostgreSQL 13 and later. Text columns and
// text conversions use the "C" collation, so that text orders and compares
// byte by byte as in DuckDB, whatever the database's default collation.
type postgres struct{}

var (
	_ dialect = postgres{}
	_ stager  = postgres{}
)

func (postgres) ident(name string) string { return duckDB{}.ident(name) }

// str relies on standard_conforming_strings (on by default since
// PostgreSQL 9.1): a backslash is an ordinary character.
func (postgres) str(s string) string { return duckDB{}.str(s) }

func (d postgres) float(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "CAST('Infinity' AS DOUBLE PRECISION)"
	case math.IsInf(f, -1):
		return "CAST('-Infinity' AS DOUBLE PRECISION)"
	case math.IsNaN(f):
		return "CAST('NaN' AS DOUBLE PRECISION)"
	}
	// PostgreSQL parses float8 text with strtod: exact for the shortest
	// round-trip text.
	return "CAST(" + d.str(strconv.FormatFloat(f, 'g', -1, 64)) + " AS DOUBLE PRECISION)"
}

func (postgres) date(t time.Time) string { return duckDB{}.date(t) }

// source is unused: the PostgreSQL dialect reads sources in this process
// ([postgres.stage]).
func (postgres) source(*spec.Table, []string, []string, map[string]string) (string, string) {
	return "", ""
}

// columns is unused, as source is.
func (postgres) columns(*spec.Table) string { return "" }

func (d postgres) replaceTable(name, query string, temp bool) string {
	kw := "CREATE TABLE "
	if temp {
		kw = "CREATE TEMP TABLE "
	}
	return "DROP TABLE IF EXISTS " + d.ident(name) + " CASCADE; " + kw + d.ident(name) + " AS " + query
}

func (d postgres) replaceTableDef(name, cols string) string {
	return "DROP TABLE IF EXISTS " + d.ident(name) + " CASCADE; CREATE TABLE " + d.ident(name) + " (" + cols + ")"
}

// replaceView drops a view of the same name (and views built on it, which
// PostgreSQL would otherwise keep bound to the old one) before creating it.
func (d postgres) replaceView(name, query string) string {
	return "DROP VIEW IF EXISTS " + d.ident(name) + " CASCADE; CREATE VIEW " + d.ident(name) + " AS " + query
}

func (postgres) checkpoint() string { return "" }

func (d postgres) matches(expr, re string) string {
	return "(" + expr + " ~ " + d.str("^(?:"+re+")$") + ")"
}

// toDouble casts inline when the text is a plain decimal — an optional
// sign, digits with at most one point, at least one digit, under 300
// characters (it cannot be out of range) — checked with translate and
// ltrim rather than a regular expression (a regular expression costs about
// a microsecond a row, and the checks of Load use this expression several
// times per value); text matching numberRE otherwise (exponents, long
// digit strings) goes through the work schema's try function
// ([pgTryFloat8]); any other text is NULL. On text numberRE accepts it
// agrees with DuckDB's TRY_CAST (TestPostgresAgreesWithDuckDB).
func (d postgres) toDouble(expr string) string {
	if name, ok := unquote(expr); ok {
		// A staged column: its number was parsed while streaming.
		return d.ident(pgNumPrefix + name)
	}
	body := "ltrim(" + expr + ", '+-')"
	rest := "translate(" + body + ", '0123456789', '')"
	plain := "length(" + expr + ") < 300 AND length(" + expr + ") - length(" + body + ") <= 1 AND " +
		rest + " IN ('', '.') AND length(" + rest + ") < length(" + body + ")"
	return "CASE WHEN " + plain + " THEN CAST(" + expr + " AS DOUBLE PRECISION) WHEN " + d.matches(expr, numberRE) +
		" THEN " + d.ident(ReservedPrefix+"try_float8") + "(" + expr + ") END"
}

// Companion columns of the staging tables (see [postgres.stage]): for every
// integer and numeric column c, pgNumPrefix+c holds TRY_CAST(c AS DOUBLE)
// of text matching numberRE (NULL otherwise); for every date column,
// pgDatePrefix+c holds TRY_CAST(c AS DATE) of text matching dateRE. The
// load's checks and conversions, which call toDouble and toDate on a
// staged column by its quoted name, read them instead of parsing the text
// in SQL several times per value (PostgreSQL has no TRY_CAST; its
// expressions are re-evaluated at every use).
const (
	pgNumPrefix  = ReservedPrefix + "num_"
	pgDatePrefix = ReservedPrefix + "date_"
)

// unquote returns the name of a quoted identifier holding no quote.
func unquote(expr string) (string, bool) {
	if len(expr) < 2 || expr[0] != '"' || expr[len(expr)-1] != '"' || strings.Contains(expr[1:len(expr)-1], `"`) {
		return "", false
	}
	return expr[1 : len(expr)-1], true
}

// finite evaluates expr once: abs(NaN) is NaN, which PostgreSQL orders
// above every number, Infinity included.
func (postgres) finite(expr string) string {
	return "(abs(" + expr + ") < CAST('Infinity' AS DOUBLE PRECISION))"
}

// toDate builds the date from its parts when the text is YYYY-MM-DD (ten
// characters, digits but for the two dashes, checked without a regular
// expression) with a month 01–12 and a day 01–31, and keeps it only when
// the day exists in that month (no 31 April): NULL otherwise, as DuckDB's
// TRY_CAST. Year 0000 is 1 BC, as in DuckDB (PostgreSQL numbers it −1).
// Nested CASEs fix the order of evaluation: the parts are cast only once
// they are known to be digits.
func (d postgres) toDate(expr string) string {
	if name, ok := unquote(expr); ok {
		return d.ident(pgDatePrefix + name)
	}
	part := func(from, n int) string {
		return fmt.Sprintf("CAST(substr(%s, %d, %d) AS INTEGER)", expr, from, n)
	}
	year := "CASE WHEN " + part(1, 4) + " = 0 THEN -1 ELSE " + part(1, 4) + " END"
	x := "(make_date(" + year + ", " + part(6, 2) + ", 1) + (" + part(9, 2) + " - 1))"
	return "CASE WHEN length(" + expr + ") = 10 AND translate(" + expr + ", '0123456789', '') = '--' AND substr(" + expr +
		", 5, 1) = '-' AND substr(" + expr + ", 8, 1) = '-' THEN CASE WHEN " + part(6, 2) + " BETWEEN 1 AND 12 AND " +
		part(9, 2) + " BETWEEN 1 AND 31 THEN CASE WHEN extract(month FROM " + x + ") = " + part(6, 2) + " THEN " + x + " END END END"
}

func (postgres) toBigint(expr string) string { return "CAST(" + expr + " AS BIGINT)" }
func (postgres) toText(expr string) string   { return "(CAST(" + expr + " AS TEXT) COLLATE \"C\")" }
func (postgres) floorInt(expr string) string { return "CAST(floor(" + expr + ") AS BIGINT)" }

func (d postgres) plusZero(expr string) string {
	return "CASE WHEN " + expr + " = 0 THEN CAST(0 AS " + d.double() + ") ELSE " + expr + " END"
}

func (d postgres) categoryIndex(expr string, values []string) string {
	return "(array_position(CAST(ARRAY[" + strList(d, values) + "] AS TEXT[]), CAST(" + expr + " AS TEXT)) - 1)"
}

func (d postgres) dateIndex(expr string, min time.Time, g spec.Granularity) string {
	min = min.UTC()
	year := "CAST(extract(year FROM " + expr + ") AS BIGINT)"
	switch g {
	case spec.Month:
		month := "CAST(extract(month FROM " + expr + ") AS BIGINT)"
		return fmt.Sprintf("((%s - %d) * 12 + %s - %d)", year, min.Year(), month, int(min.Month()))
	case spec.Year:
		return fmt.Sprintf("(%s - %d)", year, min.Year())
	default:
		return "CAST(" + expr + " - " + d.date(min) + " AS BIGINT)"
	}
}

func (postgres) bigint() string { return "BIGINT" }
func (postgres) double() string { return "DOUBLE PRECISION" }
func (postgres) wide() string   { return "NUMERIC" }
func (postgres) text() string   { return "TEXT" }

// parser returns the database that parses SQL for [Engine.SerializeSQL]:
// the engine's own when it is DuckDB, else an in-memory DuckDB holding no
// data, opened on first use and closed by [Engine.Close].
func (e *Engine) parser() (*sql.DB, error) {
	if _, ok := e.d.(duckDB); ok {
		return e.db, nil
	}
	e.parseOnce.Do(func() {
		c, err := duckdb.NewConnector("?"+duckDBOptions, nil)
		if err != nil {
			e.parseErr = err
			return
		}
		e.parseDB = sql.OpenDB(c)
		prev := e.release
		e.release = func() {
			if prev != nil {
				prev()
			}
			e.parseDB.Close()
		}
	})
	if e.parseErr != nil {
		return nil, fmt.Errorf("opening DuckDB to parse SQL: %w", e.parseErr)
	}
	return e.parseDB, nil
}
