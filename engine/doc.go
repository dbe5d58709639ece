// Package engine is synth's access to a SQL engine: it loads the input
// tables of a [spec.Spec] into the engine, checks every value against its
// public domain, bins the released columns, and computes the statistics the
// mechanisms need — degrees of join values, join sizes, the boundary counts
// T_E of residual sensitivity and the histogram of the join over the
// released universe — as generated aggregate SQL (DESIGN.md §1: private data
// is touched only through aggregate queries).
//
// # Engines
//
// [Open] connects to DuckDB, embedded through database/sql, in a temporary
// database file (the default), in a database file of the user's or in
// memory, or to a PostgreSQL server (postgres://…, through
// github.com/jackc/pgx/v5). DuckDB extensions are never installed or loaded
// automatically, so the engine never reaches the network beyond the
// server it is given. Everything engine-specific — identifier quoting, the
// file readers, parsing, the categorical and date bin expressions, how a
// table or view is replaced — sits behind a small internal dialect (one
// implementation per engine: dialect.go, postgres.go); the statistics, the
// loader's checks and every caller are the same SQL on both. Every
// identifier in generated SQL is quoted and every literal escaped.
//
// # The PostgreSQL dialect
//
// What differs on PostgreSQL: sources are read in this process and
// streamed into TEMP staging tables with COPY FROM STDIN (CSV through
// encoding/csv; Parquet through an in-memory DuckDB that only reads the
// file), so the server needs no access to the files; TRY_CAST has no
// equivalent, so numbers are cast after the full-match pattern (with a
// small PL/pgSQL function of the work schema for long or exponent
// spellings, rounding out-of-range values to ±Infinity or ±0 as DuckDB
// does) and dates are built from their parts; text columns use the "C"
// collation so that text orders byte by byte as in DuckDB; a replaced
// table or view is dropped (CASCADE) and created. Two visible differences
// remain: a " inside an unquoted CSV field is a [*CSVError] (DuckDB reads it
// as a character), and the text label of an integral DOUBLE in
// [Degree.Values] is "1" (DuckDB: "1.0"). Statistics are equal on both
// engines, and so are seeded releases (TestReleaseSamePostgresDuckDB).
//
// # Loading
//
// [Engine.Load] reads CSV files with DuckDB's read_csv, every column as
// text, with nothing sniffed: synth reads the header itself (an empty
// file, an unnamed or duplicate column name is a [*CSVError]) and gives
// DuckDB the columns and the one dialect synth reads. A record that does
// not parse is a [*CSVError] naming the file and line, on one line. Parquet
// files are read with read_parquet, every column cast to text, so that
// each value is checked by the same SQL: parsing (TRY_CAST after a
// full-match pattern of the accepted syntax), integrality, range, category
// list, boolean and date syntax. What happens to a value outside its domain
// follows the column's out_of_domain policy (error, clamp, drop); an error
// is a [*DataError] naming file, row, column and value. An empty value
// (NULL, "") is outside every domain but a nullable column's, where it is
// NULL, in the column's last cell ([spec.Column.NullCell]). Each engine table
// holds [RowColumn], the key columns, the typed non-key columns and, per
// non-key column, [BinColumn] with its cell index in [0, Size()), equal to
// what [spec.Column.Bin] returns for the same value.
//
// On DuckDB each source is read once: one CREATE TABLE AS SELECT reads the
// file, checks every value, types it and computes its cell; a failing value
// is stored as NULL (a key that is not a canonical integer, in a BIGINT key
// column, as the smallest BIGINT) and a categorical as its cell only. One
// aggregate over the stored values then finds the first failing row and
// checks the key types. Integer, DATE and BOOLEAN Parquet columns are
// checked typed, with the same outcome. The engine table is a view of that
// data table selecting the row number (its row id plus one: the scan is
// stored in file order), the declared columns (a categorical's label from
// its cell) and the cells, without the rows a drop column removes. Only when a value fails is the source
// read again, as text, to name the file, row, column, value and domain in
// the error. The PostgreSQL dialect stages every source as text first (see
// below) and builds its tables from the staging tables.
//
// With [Engine.ReadInPlace] (what `synth answer` uses) a Parquet source is
// not stored: the engine table is a view of the file, the same scan with
// the same checks, typing and cells. The load runs the checks as one
// aggregate over the file — the number of failing values and the key
// checks — and looks for the first failing row only when that number is
// not zero; every statistic then reads the file again. A release re-reads
// its tables many times and stores them (measured faster).
//
// Only declared columns are read. A run that reads fewer loads a
// projection of the spec ([Project]): `synth answer` loads the tables and
// columns its queries name, checked exactly as a whole load checks them.
// A CSV record longer than [MaxRecordBytes] because of a value in a
// column the spec does not declare is loaded from a streamed copy of the
// declared columns (memory stays bounded whatever the value's length); a
// declared value that long is a [*CSVError] naming the line, column and
// length.
//
// # Memory
//
// An embedded DuckDB engine's buffers are bounded by DuckDB's memory_limit:
// the environment variable SYNTH_DUCKDB_MEMORY_LIMIT ([MemoryLimitEnv],
// e.g. 512MB or 4GiB; "max" for DuckDB's default of 80% of the machine's
// memory), [DefaultMemoryLimit] (256 MB) when unset; SYNTH_DUCKDB_THREADS
// ([ThreadsEnv]) sets the threads queries run on (DuckDB's default, one
// per core, when unset). The default engine keeps
// its database in a file, compressed, in a private folder of the temporary
// directory (os.TempDir, e.g. $TMPDIR) that [Engine.Close] removes, and
// spills what does not fit the limit there. The limit bounds the buffers,
// not the process: the memory synth needs grows with the data only until
// the buffers reach the limit (about SF 3 of the TPC-H example at 256 MB),
// plus about 0.2 GiB of DuckDB's allocator and synth's own arrays; beyond
// that only the disk it uses grows. DuckDB's allocator is told to return
// freed memory (allocator_background_threads, a 32 MB bulk-deallocation
// threshold), else memory queries freed stayed in its arenas on top of the
// buffers; DUCKDB_JE_MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0 in the
// environment returns it at once. A process killed before Close leaves the
// folder (synth-duckdb-*) and the private rows in it behind. Spilling does
// not make every query fit: a statistic DuckDB cannot run within the limit
// runs once more on one thread (the same result), and when that fails too
// the error says the engine ran out of memory and names
// SYNTH_DUCKDB_MEMORY_LIMIT.
//
// # Statistics
//
// The statistics methods take a [hypergraph.Hypergraph] whose relation
// names are loaded tables and whose attributes map to their key columns.
// Joins are natural joins with bag semantics; a NULL key joins nothing.
// Counts of a join grouped by some variables are computed by one of two
// plans, chosen per query from public information only (the join, the
// grouped columns and the primary keys the spec declares; see plan.go):
// when every relation but one joins the others on columns covering its
// declared key, a plain JOIN … GROUP BY (pre-aggregating by a key would
// not shrink the input); otherwise sum-product variable elimination in
// SQL: every relation not joined on its key is first aggregated by the
// variables that matter outside it, and attributes are then summed out one
// by one, which on an acyclic join is Yannakakis-style bottom-up
// aggregation. Both plans give the same numbers, also when the data breaks
// a declared key (the oracle test checks both on every instance).
//
// # Equality of join values
//
// Every statistic groups join values by the equality the join itself uses:
// the degree of a value, the boundary groups of T_E and the join of a
// histogram all compare the same expression of the stored values (the
// value, or its text for an attribute whose columns have different SQL
// types). This is a privacy invariant, not a nicety: one tuple changes the
// join by the number of tuples its value joins, and the degrees and T_E
// bound that number only if they count those tuples in one group. Load
// therefore stores every value in a form whose equality does not depend on
// how it is compared: a numeric −0 is stored as +0 (IEEE equality would
// join it with 0 while its text "-0.0" would not group with "0.0"),
// integers as BIGINT, dates as DATE, booleans as BOOLEAN, and key columns as
// text or canonical BIGINT ("-0" and "01" are text and join nothing but
// themselves).
//
// # Not implemented
//
// Server engines other than PostgreSQL and a postgres_fdw cluster of
// PostgreSQL servers (Citus runs the same SQL, see docs/scale-out.md;
// Trino and Spark SQL have dialects whose statistics SQL is checked
// against golden files only, never run against a live engine, and no
// loading path); reading from URLs (the DuckDB httpfs
// extension is deliberately never loaded); CSV dialects other than
// comma-separated with a header row and double quotes; glob patterns in
// sources (a path holding *, ? or [ is read by DuckDB as a pattern).
//
// # The database file
//
// Every table and view the engine creates lives in a work schema of its
// own with a random name, dropped by [Engine.Close]; with "duckdb:PATH" the
// file's own objects are never read, replaced or dropped (see [Open] for
// what a crash leaves behind and how the next Open removes it).
//
// An [Engine] is safe for concurrent use, but [Engine.Load] must not run
// while statistics are computed over the tables it replaces.
package engine
