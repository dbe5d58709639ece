package engine

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/synth-dp/synth/spec"
)

// stage reads t's source in this process and streams it into the TEMP
// table stage with COPY FROM STDIN: the row number, then the declared
// columns as text (collation "C").
//
//   - CSV: encoding/csv reads synth's CSV dialect (see [newCSVReader]);
//     a record with the wrong number of fields, a malformed quote, bytes
//     that are not UTF-8 or a NUL byte in a declared column stop the load
//     with a [*CSVError] naming the file's line. Unlike DuckDB's reader, a
//     " inside an unquoted field is an error too.
//   - Parquet: an in-memory DuckDB reads the file (nothing else: it holds
//     no table) with the same conversions to text as the DuckDB engine,
//     and its rows are streamed.
//
// Beside the text, every integer and numeric column gets its number and
// every date column its date, parsed here with DuckDB's TRY_CAST semantics
// (see pgNumPrefix). Nothing is held in memory beyond one row.
func (d postgres) stage(ctx context.Context, conn *sql.Conn, t *spec.Table, header []string, stage string,
	declared func(kinds map[string]string) ([]string, error)) (string, error) {
	var src copySource
	var cols []string
	if header != nil {
		kinds := map[string]string{}
		for _, h := range header {
			kinds[h] = d.text()
		}
		var err error
		if cols, err = declared(kinds); err != nil {
			return "", err
		}
		cs, err := newCSVSource(t, header, cols)
		if err != nil {
			return "", err
		}
		src = cs
	} else {
		ps, c, err := newParquetSource(ctx, t, declared)
		if err != nil {
			return "", err
		}
		src, cols = ps, c
	}
	defer src.Close()
	defs := []string{d.ident(rowColumn) + " BIGINT"}
	for _, c := range cols {
		defs = append(defs, d.ident(c)+` TEXT COLLATE "C"`)
	}
	// Companion columns parsed here (see pgNumPrefix).
	comp := &companionSource{copySource: src}
	names := append([]string{rowColumn}, cols...)
	for i, name := range cols {
		c := t.Column(name)
		if c == nil {
			continue
		}
		switch c.Type {
		case spec.Integer, spec.Numeric:
			defs = append(defs, d.ident(pgNumPrefix+name)+" DOUBLE PRECISION")
			names = append(names, pgNumPrefix+name)
			comp.conv = append(comp.conv, companion{field: i + 1, parse: parseNumber})
		case spec.Date:
			defs = append(defs, d.ident(pgDatePrefix+name)+" DATE")
			names = append(names, pgDatePrefix+name)
			comp.conv = append(comp.conv, companion{field: i + 1, parse: parseDate})
		}
	}
	if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+d.ident(stage)+"; CREATE TEMP TABLE "+
		d.ident(stage)+" ("+strings.Join(defs, ", ")+")"); err != nil {
		return "", fmt.Errorf("engine: load: table %s: %w", t.Name, err)
	}
	err := conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("engine: load: unexpected driver connection %T", dc)
		}
		_, err := sc.Conn().CopyFrom(ctx, pgx.Identifier{stage}, names, comp)
		return err
	})
	if serr := src.Err(); serr != nil {
		// The source's own error (a bad record) says more than COPY's.
		return "", serr
	}
	if err != nil {
		return "", &fileError{table: t.Name, file: t.Source, msg: "cannot load the source into PostgreSQL", err: err}
	}
	return d.ident(rowColumn), nil
}

// companion is a column parsed from the text of field (an index into a
// row's values).
type companion struct {
	field int
	parse func(string) any
}

// companionSource appends the companion columns to every row.
type companionSource struct {
	copySource
	conv []companion
	vals []any
}

func (s *companionSource) Values() ([]any, error) {
	v, err := s.copySource.Values()
	if err != nil {
		return nil, err
	}
	s.vals = append(s.vals[:0], v...)
	for _, c := range s.conv {
		var out any
		if t, ok := v[c.field].(string); ok {
			out = c.parse(t)
		}
		s.vals = append(s.vals, out)
	}
	return s.vals, nil
}

var (
	numberFull = regexp.MustCompile("^(?:" + numberRE + ")$")
	dateFull   = regexp.MustCompile("^(?:" + dateRE + ")$")
)

// parseNumber is DuckDB's TRY_CAST(s AS DOUBLE) on text matching
// numberRE — correctly rounded, ±Inf beyond the range, ±0 below it — and
// nil on any other text.
func parseNumber(s string) any {
	if !numberFull.MatchString(s) {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil
	}
	return f
}

// parseDate is TRY_CAST(s AS DATE) on text matching dateRE (nil when the
// day does not exist) and nil on any other text.
func parseDate(s string) any {
	if !dateFull.MatchString(s) {
		return nil
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return nil
	}
	return d
}

// copySource is a [pgx.CopyFromSource] that owns resources.
type copySource interface {
	pgx.CopyFromSource
	Close() error
}

// csvSource streams a CSV file's declared columns, after its header.
type csvSource struct {
	t      *spec.Table
	f      io.ReadCloser
	r      *csv.Reader
	fields int   // the header's number of fields
	idx    []int // field index of each declared column
	row    int64
	vals   []any
	err    error
}

func newCSVSource(t *spec.Table, header, cols []string) (*csvSource, error) {
	f, err := openCSV(t.Source)
	if err != nil {
		return nil, &fileError{table: t.Name, file: t.Source, msg: "cannot read the source", err: err}
	}
	r := newCSVReader(bufio.NewReaderSize(f, 1<<20))
	if _, err := r.Read(); err != nil { // the header, checked by csvHeader
		f.Close()
		return nil, &fileError{table: t.Name, file: t.Source, msg: "cannot read the source", err: err}
	}
	pos := map[string]int{}
	for i, h := range header {
		pos[h] = i
	}
	s := &csvSource{t: t, f: f, r: r, fields: len(header), vals: make([]any, len(cols)+1)}
	for _, c := range cols {
		s.idx = append(s.idx, pos[c])
	}
	return s, nil
}

func (s *csvSource) Next() bool {
	if s.err != nil {
		return false
	}
	rec, err := s.r.Read()
	switch {
	case errors.Is(err, io.EOF):
		return false
	case err != nil:
		if e := parseError(s.t.Source, err); e != nil {
			s.err = e
		} else {
			s.err = &fileError{table: s.t.Name, file: s.t.Source, msg: "cannot read the source", err: err}
		}
		return false
	}
	if len(rec) != s.fields {
		line, _ := s.r.FieldPos(0)
		s.err = fieldCount(s.t.Source, int64(line), len(rec), s.fields)
		return false
	}
	s.row++
	s.vals[0] = s.row
	for k, i := range s.idx {
		v := rec[i]
		if e := invalidUTF8(s.t.Source, s.r, i, v); e != nil {
			s.err = e
			return false
		}
		if strings.IndexByte(v, 0) >= 0 {
			line, _ := s.r.FieldPos(i)
			s.err = &CSVError{File: s.t.Source, Line: int64(line), Problem: "a NUL byte in a field", Fix: "remove it (PostgreSQL text cannot hold it)"}
			return false
		}
		s.vals[k+1] = v
	}
	return true
}

func (s *csvSource) Values() ([]any, error) { return s.vals, nil }
func (s *csvSource) Err() error             { return s.err }
func (s *csvSource) Close() error           { return s.f.Close() }

// parquetBatchRows is how many rows of a Parquet file one query of a
// [parquetSource] reads: the driver returns a query's result materialized
// (duckdb-go has no streaming results), so a whole-file query held the
// file's rows in memory (0.5 GiB at TPC-H SF 1); batches by file row number
// hold one batch, and DuckDB skips the row groups outside it. A release of
// the TPC-H example on PostgreSQL from SF 1 Parquet: peak RSS 0.51 GiB
// unbatched, 0.21 GiB with 2²⁰ rows a batch (52.6 s vs 51.6 s), 0.17 GiB
// with 2¹⁸ but 20% slower.
var parquetBatchRows int64 = 1 << 20 // a variable for tests

// parquetSource streams the declared columns of a Parquet file read by an
// in-memory DuckDB, a batch of [parquetBatchRows] rows at a time.
type parquetSource struct {
	ctx   context.Context // of the load, for the batches' queries
	t     *spec.Table
	db    *sql.DB
	sel   string // the source's SELECT, without a WHERE
	next  int64  // the first file row number of the next batch
	rows  *sql.Rows
	batch int64 // rows read from the current batch
	row   int64
	text  []sql.NullString
	dst   []any
	vals  []any
	err   error
}

func newParquetSource(ctx context.Context, t *spec.Table, declared func(map[string]string) ([]string, error)) (*parquetSource, []string, error) {
	conn, err := duckdb.NewConnector("?"+duckDBOptions, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: load: table %s: opening DuckDB to read Parquet: %w", t.Name, err)
	}
	db := sql.OpenDB(conn)
	d := duckDB{}
	kinds, err := fileColumns(ctx, db, d, t)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	cols, err := declared(kinds)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	// d.source's Parquet SELECT ends with FROM read_parquet(…,
	// file_row_number = true): a WHERE on file_row_number is pushed down.
	sel, _ := d.source(t, nil, cols, kinds)
	s := &parquetSource{ctx: ctx, t: t, db: db, sel: sel, text: make([]sql.NullString, len(cols)), vals: make([]any, len(cols)+1)}
	if err := s.query(); err != nil {
		db.Close()
		return nil, nil, err
	}
	s.dst = []any{&s.row}
	for i := range s.text {
		s.dst = append(s.dst, &s.text[i])
	}
	return s, cols, nil
}

// query starts the batch of file rows [s.next, s.next + parquetBatchRows).
func (s *parquetSource) query() error {
	q := fmt.Sprintf("%s WHERE file_row_number >= %d AND file_row_number < %d", s.sel, s.next, s.next+parquetBatchRows)
	rows, err := s.db.QueryContext(s.ctx, q)
	if err != nil {
		return &fileError{table: s.t.Name, file: s.t.Source, msg: "cannot read the source", err: err}
	}
	s.rows, s.batch = rows, 0
	s.next += parquetBatchRows
	return nil
}

func (s *parquetSource) Next() bool {
	for s.err == nil && !s.rows.Next() {
		if err := s.rows.Err(); err != nil {
			s.err = &fileError{table: s.t.Name, file: s.t.Source, msg: "cannot read the source", err: err}
			break
		}
		// A batch short of parquetBatchRows was the file's last: file row
		// numbers have no gaps.
		full := s.batch == parquetBatchRows
		s.rows.Close()
		if !full {
			return false
		}
		if err := s.query(); err != nil {
			s.err = err
		}
	}
	if s.err != nil {
		return false
	}
	s.batch++
	if err := s.rows.Scan(s.dst...); err != nil {
		s.err = &fileError{table: s.t.Name, file: s.t.Source, msg: "cannot read the source", err: err}
		return false
	}
	s.vals[0] = s.row
	for i, v := range s.text {
		if !v.Valid {
			s.vals[i+1] = nil
			continue
		}
		if strings.IndexByte(v.String, 0) >= 0 {
			s.err = &DataError{File: s.t.Source, Row: s.row, Column: s.t.Columns[i].Name, Value: v.String,
				Problem: "holds a NUL byte", Expected: "text without NUL bytes (PostgreSQL text cannot hold them)"}
			return false
		}
		s.vals[i+1] = v.String
	}
	return true
}

func (s *parquetSource) Values() ([]any, error) { return s.vals, nil }
func (s *parquetSource) Err() error             { return s.err }
func (s *parquetSource) Close() error {
	s.rows.Close()
	return s.db.Close()
}
