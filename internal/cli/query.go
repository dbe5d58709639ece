package cli

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/spf13/cobra"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/output/layout"
)

// queryView is the name under which synth query shows the file to the SQL.
const queryView = "synthetic"

type queryOptions struct {
	format   string
	limits   queryLimits
	memLimit string
}

// queryLimits bound the work of one synth query: a query over a release
// is a third party's SQL, and a few cross joins reach billions of rows.
type queryLimits struct {
	// timeout stops the query (0: none).
	timeout time.Duration
	// memory is DuckDB's memory_limit ("" leaves DuckDB's default, 80%
	// of the machine's memory).
	memory string
	// maxTemp is DuckDB's max_temp_directory_size: the spill files of a
	// query that does not fit in memory, in a private folder removed at
	// the end.
	maxTemp string
	// maxRows caps the rows of the result, which synth holds in memory to
	// print them (0: none).
	maxRows int64
}

// The default limits of synth query.
const (
	DefaultQueryTimeout = 2 * time.Minute
	DefaultQueryMaxTemp = "1GiB"
	DefaultQueryMaxRows = 1_000_000
)

func newQueryCmd(g *globalOptions) *cobra.Command {
	o := &queryOptions{}
	cmd := &cobra.Command{
		Use:   "query FILE SQL",
		Short: "Run SQL over a released Parquet file with the embedded DuckDB (no duckdb CLI needed)",
		Long: `query runs one SQL statement over a Parquet file, typically a released
DIR/synthetic.parquet, with the DuckDB engine built into synth: nothing else
needs to be installed. FILE may also be a release folder (its
synthetic.parquet is used). The SQL refers to the file as the view
"synthetic", for example

  synth query out/demo/synthetic.parquet "SELECT tier, count(*) AS n FROM synthetic GROUP BY ALL ORDER BY n DESC"

and may use any DuckDB function, e.g. parquet_kv_metadata('FILE') for the
privacy report stored in the file. The result is printed as an aligned table
(--format text, the default), CSV with a header row (--format csv) or a JSON
array of objects (--format json).

The released file is public: query reads only it, never private data.
The SQL runs in a sandbox: exactly one read-only statement (SELECT,
WITH … SELECT, VALUES, FROM …, DESCRIBE, SUMMARIZE), checked by DuckDB's
parser before it runs; no file but FILE can be read or written, no database
attached, no extension installed or loaded (so no network), and the
configuration is locked.
The work is bounded: the query stops after --timeout (default 2m), DuckDB
keeps to --memory-limit (default: SYNTH_DUCKDB_MEMORY_LIMIT, else 256MB)
and spills at most --max-temp (default 1GiB) to a private temporary folder
removed at the end, and a result of more than --max-rows rows (default
1000000) is refused; each flag raises its limit (0 for --timeout and
--max-rows: none).
Exit codes: 1 when the file cannot be read or the query fails while running
(a limit reached included),
2 for a SQL statement DuckDB cannot parse or bind (a refused file access
included), more than one statement or one that is not read-only, or bad
arguments.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("%s takes FILE and SQL, got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.format != "text" && o.format != "csv" && o.format != "json" {
				return usageErrorf("--format %q: want text, csv or json", o.format)
			}
			if o.limits.timeout < 0 {
				return usageErrorf("--timeout %v: want ≥ 0 (0: no time limit)", o.limits.timeout)
			}
			if o.limits.maxRows < 0 {
				return usageErrorf("--max-rows %d: want ≥ 0 (0: no limit)", o.limits.maxRows)
			}
			if !querySizeRE.MatchString(o.limits.maxTemp) {
				return usageErrorf("--max-temp %q: want a size such as 512MB or 4GiB", o.limits.maxTemp)
			}
			o.limits.memory = o.memLimit
			if o.memLimit == "" {
				mem, err := engine.DuckDBMemoryLimit()
				if err != nil {
					return &UsageError{Err: err}
				}
				o.limits.memory = mem
			} else if !querySizeRE.MatchString(o.memLimit) {
				return usageErrorf("--memory-limit %q: want a size such as 512MB or 4GiB", o.memLimit)
			}
			return runQuery(cmd.Context(), g.stdout, args[0], args[1], o.format, o.limits)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text, csv or json")
	cmd.Flags().DurationVar(&o.limits.timeout, "timeout", DefaultQueryTimeout, "stop the query after this long (0: no limit)")
	cmd.Flags().StringVar(&o.memLimit, "memory-limit", "", "DuckDB's memory limit for the query, e.g. 4GiB (default: "+engine.MemoryLimitEnv+", else "+engine.DefaultMemoryLimit+")")
	cmd.Flags().StringVar(&o.limits.maxTemp, "max-temp", DefaultQueryMaxTemp, "most disk space the query may spill to its private temporary folder")
	cmd.Flags().Int64Var(&o.limits.maxRows, "max-rows", DefaultQueryMaxRows, "refuse a result of more rows than this (0: no limit)")
	return cmd
}

// querySizeRE is the syntax of a size flag, as DuckDB reads it.
var querySizeRE = regexp.MustCompile(`^(?i)[0-9]+(\.[0-9]+)?\s*(b|bytes|kb|mb|gb|tb|kib|mib|gib|tib)$`)

// runQuery opens an in-memory DuckDB, makes file the view synthetic, runs
// query within lim and prints its result to w.
func runQuery(ctx context.Context, w io.Writer, file, query, format string, lim queryLimits) error {
	if strings.TrimSpace(query) == "" {
		return usageErrorf("SQL is empty")
	}
	fi, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	var tables map[string]string
	if fi.IsDir() {
		if tables, err = releaseTables(file); err != nil {
			return err
		}
		file = filepath.Join(file, layout.ParquetName)
		if fi, err = os.Stat(file); err != nil {
			return fmt.Errorf("query: %w", err)
		}
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("query: %s is not a regular file: synth query reads a Parquet file", file)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	tmp, err := os.MkdirTemp("", "synth-query-")
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer os.RemoveAll(tmp)
	db, err := openQuerySandbox(ctx, abs, tables, tmp, lim)
	if err != nil {
		return err
	}
	defer db.Close()
	if lim.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, lim.timeout, errQueryTimeout)
		defer cancel()
	}
	err = runQueryIn(ctx, db, w, file, query, format, lim)
	switch {
	case err == nil:
		return nil
	case errors.Is(context.Cause(ctx), errQueryTimeout):
		return fmt.Errorf("query: stopped at its time limit of %v (--timeout raises it; an aggregate or a LIMIT may help): %w", lim.timeout, errQueryTimeout)
	case strings.Contains(err.Error(), "Out of Memory") || strings.Contains(err.Error(), "max_temp_directory_size"):
		return fmt.Errorf("query: stopped at its memory limit (--memory-limit %s, --max-temp %s raise it; an aggregate or a LIMIT may help): %w", orDefault(lim.memory), lim.maxTemp, err)
	}
	return err
}

// errQueryTimeout is the cause of a query stopped by --timeout.
var errQueryTimeout = errors.New("time limit reached")

// orDefault names an empty memory limit.
func orDefault(mem string) string {
	if mem == "" {
		return "max"
	}
	return mem
}

// runQueryIn runs query on the sandbox db and prints its result to w.
func runQueryIn(ctx context.Context, db *sql.DB, w io.Writer, file, query, format string, lim queryLimits) error {
	if err := checkQueryStatement(ctx, db, query); err != nil {
		return err
	}
	run := query
	if lim.maxRows > 0 {
		// DuckDB materializes a result outside its memory_limit: a 5-way
		// cross join of a small release reached 5 GB of RSS in 30 s. The
		// statement (one read-only query, checked above) is run as a
		// subquery that yields at most one row more than the limit, so
		// that the work stops there. The newline keeps a trailing --
		// comment from swallowing the parenthesis.
		// The statement is DuckDB's own rendering of its parse
		// (json_deserialize_sql of json_serialize_sql): no comment or
		// semicolon of the text can escape the subquery.
		var canon string
		if err := db.QueryRowContext(ctx, "SELECT json_deserialize_sql(json_serialize_sql(CAST($1 AS VARCHAR)))", query).Scan(&canon); err != nil {
			return &UsageError{Err: fmt.Errorf("query: %w", err)}
		}
		run = "SELECT * FROM (" + canon + ") LIMIT " + strconv.FormatInt(lim.maxRows+1, 10)
		if st, err := db.PrepareContext(ctx, run); err == nil {
			st.Close()
		} else if upper := strings.ToUpper(canon); strings.HasPrefix(upper, "SUMMARIZE") || strings.HasPrefix(upper, "DESCRIBE") {
			run = canon // one row per column of the file: nothing to bound
		} // else the prepare below fails the same way and says why
	}
	stmt, err := db.PrepareContext(ctx, run)
	if err != nil {
		if strings.Contains(err.Error(), "disabled by configuration") {
			return &UsageError{Err: fmt.Errorf("query: synth query reads the release file %s only: %w", file, err)}
		}
		return &UsageError{Err: fmt.Errorf("query: %w", err)}
	}
	defer stmt.Close()
	rows, err := stmt.QueryContext(ctx)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("query: %w", err)
		}
		out = append(out, vals)
		if lim.maxRows > 0 && int64(len(out)) > lim.maxRows {
			return fmt.Errorf("query: the result has more than %d rows (--max-rows raises the limit; an aggregate or a LIMIT may help)", lim.maxRows)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	switch format {
	case "csv":
		return writeQueryCSV(w, cols, out)
	case "json":
		return writeQueryJSON(w, cols, out)
	}
	return writeQueryTable(w, cols, out)
}

// openQuerySandbox opens an in-memory DuckDB on one connection (so that
// the view is visible to the query) with the view synthetic over the
// Parquet file at the absolute path file, then closes it to the outside
// with DuckDB's own settings: no extension is installed or autoloaded
// (Parquet is built in), only file may be read (allowed_paths) and every
// other file system access is off (enable_external_access = false: no
// COPY … TO, read_csv, glob, ATTACH, INSTALL), and the configuration is
// locked so that the query cannot switch any of it back on.
//
// tables names further views (a tables release's tables, see
// releaseTables): each is a view over its absolute path, readable too.
// tmp is the private folder DuckDB spills to, within lim.
func openQuerySandbox(ctx context.Context, file string, tables map[string]string, tmp string, lim queryLimits) (*sql.DB, error) {
	dsn := "?autoinstall_known_extensions=false&autoload_known_extensions=false&temp_directory=" + url.QueryEscape(tmp) +
		"&max_temp_directory_size=" + url.QueryEscape(lim.maxTemp)
	if lim.memory != "" {
		dsn += "&memory_limit=" + url.QueryEscape(lim.memory)
	}
	conn, err := duckdb.NewConnector(dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("query: open DuckDB: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	lit := "'" + strings.ReplaceAll(file, "'", "''") + "'"
	if _, err := db.ExecContext(ctx, "CREATE VIEW "+queryView+" AS SELECT * FROM read_parquet("+lit+")"); err != nil {
		db.Close()
		return nil, fmt.Errorf("query: reading %s: %w", file, err)
	}
	allowed := []string{lit}
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		tl := "'" + strings.ReplaceAll(tables[name], "'", "''") + "'"
		if _, err := db.ExecContext(ctx, "CREATE VIEW "+`"`+strings.ReplaceAll(name, `"`, `""`)+`"`+" AS SELECT * FROM read_parquet("+tl+")"); err != nil {
			db.Close()
			return nil, fmt.Errorf("query: reading table %s (%s): %w", name, tables[name], err)
		}
		allowed = append(allowed, tl)
	}
	for _, set := range []string{
		"SET allow_community_extensions = false",
		"SET allowed_paths = [" + strings.Join(allowed, ", ") + "]",
		"SET enable_external_access = false",
		"SET lock_configuration = true",
	} {
		if _, err := db.ExecContext(ctx, set); err != nil {
			db.Close()
			return nil, fmt.Errorf("query: sandbox (%s): %w", set, err)
		}
	}
	return db, nil
}

// releaseTables returns the tables of a tables release in folder dir
// (dir/tables/<table>.parquet) by name, with absolute paths; none for a
// release without them. A table named like the join view is refused.
func releaseTables(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, layout.TablesDir, "*.parquet"))
	if err != nil || len(files) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".parquet")
		if strings.EqualFold(name, queryView) {
			return nil, fmt.Errorf("query: %s: a table named %s would hide the join view %s", f, name, queryView)
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		out[name] = abs
	}
	return out, nil
}

// checkQueryStatement parses query with DuckDB's parser
// (json_serialize_sql, which serializes SELECT statements only) and
// refuses, as a usage error, SQL that does not parse, that holds more or
// fewer than one statement, or whose statement is not a read-only query.
// It runs nothing: the driver would execute every statement but the last
// while preparing.
func checkQueryStatement(ctx context.Context, db *sql.DB, query string) error {
	var raw string
	if err := db.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST($1 AS VARCHAR)) AS VARCHAR)", query).Scan(&raw); err != nil {
		return fmt.Errorf("query: parse the SQL: %w", err)
	}
	var parsed struct {
		Error      bool              `json:"error"`
		Message    string            `json:"error_message"`
		Statements []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(raw), &parsed); err != nil {
		return fmt.Errorf("query: parse the SQL: %w", err)
	}
	const allowed = "synth query runs one read-only statement (SELECT, WITH … SELECT, VALUES, FROM …, DESCRIBE, SUMMARIZE) over the release"
	switch {
	case parsed.Error && strings.Contains(parsed.Message, "Only SELECT"):
		return usageErrorf("query: %s; refused: %q (a statement other than a query, e.g. COPY, ATTACH, CREATE, INSTALL, SET)", allowed, query)
	case parsed.Error:
		return usageErrorf("query: %s", parsed.Message)
	case len(parsed.Statements) != 1:
		return usageErrorf("query: %s; got %d statements", allowed, len(parsed.Statements))
	}
	return nil
}

func writeQueryTable(w io.Writer, cols []string, rows [][]any) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	dashes := make([]string, len(cols))
	for i, c := range cols {
		dashes[i] = strings.Repeat("-", max(3, len([]rune(c))))
	}
	fmt.Fprintln(tw, strings.Join(dashes, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			if v == nil {
				cells[i] = "NULL"
			} else {
				cells[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(queryText(v))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "(%d row%s)\n", len(rows), map[bool]string{true: "", false: "s"}[len(rows) == 1])
	return err
}

func writeQueryCSV(w io.Writer, cols []string, rows [][]any) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(cols); err != nil {
		return err
	}
	for _, r := range rows {
		rec := make([]string, len(r))
		for i, v := range r {
			if v != nil {
				rec[i] = queryText(v)
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeQueryJSON writes an array of objects whose keys keep the column order.
func writeQueryJSON(w io.Writer, cols []string, rows [][]any) error {
	var b strings.Builder
	b.WriteString("[")
	for j, r := range rows {
		if j > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  {")
		for i, v := range r {
			if i > 0 {
				b.WriteString(", ")
			}
			k, _ := json.Marshal(cols[i])
			b.Write(k)
			b.WriteString(": ")
			b.Write(queryJSON(v))
		}
		b.WriteString("}")
	}
	if len(rows) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// queryText renders a value scanned from DuckDB.
func queryText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format(time.DateOnly)
		}
		return x.Format(time.RFC3339Nano)
	case *big.Int:
		return x.String()
	case duckdb.Decimal:
		return x.String()
	case duckdb.UUID:
		return x.String()
	}
	return fmt.Sprint(v)
}

// queryJSON renders a value scanned from DuckDB as JSON: numbers as
// numbers (NaN and infinities as strings), dates and times as strings.
func queryJSON(v any) []byte {
	switch x := v.(type) {
	case nil:
		return []byte("null")
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			raw, _ := json.Marshal(queryText(x))
			return raw
		}
	case *big.Int, duckdb.Decimal:
		return []byte(queryText(x))
	case time.Time, []byte, duckdb.UUID:
		raw, _ := json.Marshal(queryText(x))
		return raw
	}
	raw, err := json.Marshal(v)
	if err != nil {
		raw, _ = json.Marshal(queryText(v))
	}
	return raw
}
