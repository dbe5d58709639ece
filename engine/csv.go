package engine

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/synth-dp/synth/spec"
)

// CSVError is a CSV source that does not parse: a record with the wrong
// number of fields, a malformed quoted field, bytes that are not UTF-8, a
// header with duplicate or no column names, a file without data rows.
// Line is the 1-based line of the file where the offending record starts
// (the header is line 1; a quoted field holding newlines spans several
// lines), 0 when unknown.
type CSVError struct {
	// File is the table's source as given in the spec.
	File string
	// Line is the 1-based line of the file, 0 when unknown.
	Line int64
	// Problem says what is wrong, e.g. "4 fields, the header has 5".
	Problem string
	// Fix says what to do, e.g. "check quoting or the delimiter".
	Fix string

	// undeclared is set when the problem is a record too long for the
	// engine that fits without the columns the spec does not declare:
	// [Engine.Load] then reads a copy of the file without them.
	undeclared bool
}

// Error renders the error on one line as
//
//	orders.csv line 17: 4 fields, the header has 5: check quoting or the delimiter
func (e *CSVError) Error() string {
	at := e.File
	if e.Line > 0 {
		at = fmt.Sprintf("%s line %d", e.File, e.Line)
	}
	if e.Fix == "" {
		return at + ": " + e.Problem
	}
	return at + ": " + e.Problem + ": " + e.Fix
}

// Unwrap returns [ErrData].
func (e *CSVError) Unwrap() error { return ErrData }

// The fixes a [CSVError] suggests.
const (
	fixFields = "check quoting or the delimiter (synth reads comma-separated files with \" quotes)"
	fixQuote  = "close the quote, and double every \" inside a quoted field"
	fixUTF8   = "convert the file to UTF-8"
)

// openCSV opens a CSV source for reading, decompressing it when its name
// ends in .gz (gzip) or .zst (Zstandard), as the spec allows and as
// DuckDB's read_csv does by the same rule. Closing the reader closes the
// file.
func openCSV(file string) (io.ReadCloser, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	switch csvCompression(file) {
	case "gzip":
		z, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("not a gzip file (the name ends in .gz): %w", err)
		}
		return readCloser{Reader: z, close: func() error { z.Close(); return f.Close() }}, nil
	case "zstd":
		br := bufio.NewReaderSize(f, 1<<16)
		if magic, _ := br.Peek(4); !bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
			f.Close()
			return nil, errors.New("not a Zstandard file (the name ends in .zst)")
		}
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("not a Zstandard file (the name ends in .zst): %w", err)
		}
		return readCloser{Reader: z, close: func() error { z.Close(); return f.Close() }}, nil
	}
	return f, nil
}

// csvCompression names the compression of a CSV source for DuckDB's
// read_csv from the file's name, ignoring case: "gzip" (.gz), "zstd"
// (.zst) or "none".
func csvCompression(file string) string {
	lower := strings.ToLower(file)
	switch {
	case strings.HasSuffix(lower, ".gz"):
		return "gzip"
	case strings.HasSuffix(lower, ".zst"):
		return "zstd"
	}
	return "none"
}

// readCloser pairs a decompressing reader with the close of its file.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// newCSVReader reads synth's one CSV dialect: comma-separated, "-quoted,
// a " inside a quoted field doubled.
func newCSVReader(r io.Reader) *csv.Reader {
	c := csv.NewReader(r)
	c.FieldsPerRecord = -1
	c.ReuseRecord = true
	return c
}

// csvHeader reads the header of a CSV source and checks it: it returns
// the column names, or a [*CSVError] when the file is empty (not even a
// header), or the header does not parse, holds bytes that are not UTF-8,
// an empty name or a name twice (ignoring case, as the engine compares
// names). A header without data rows is an empty table, which is valid.
func csvHeader(t *spec.Table) ([]string, error) {
	file := t.Source
	f, err := openCSV(file)
	if err != nil {
		return nil, &fileError{table: t.Name, file: file, msg: "cannot read the source", err: err}
	}
	defer f.Close()
	r := newCSVReader(bufio.NewReader(f))
	rec, err := r.Read()
	switch {
	case errors.Is(err, io.EOF):
		return nil, &CSVError{File: file, Line: 1, Problem: "the file is empty",
			Fix: "a CSV source needs a header row naming its columns"}
	case err != nil:
		if e := parseError(file, err); e != nil {
			return nil, e
		}
		return nil, &fileError{table: t.Name, file: file, msg: "cannot read the source", err: err}
	}
	for i, h := range rec {
		// A carriage return inside the header is a file whose lines end in
		// a bare \r (classic Mac OS): the whole file reads as one line,
		// and its names as fragments of rows. A NUL is a binary or UTF-16
		// file. Both are said as such, before any name is compared.
		if strings.Contains(h, "\r") {
			return nil, &CSVError{File: file, Line: 1, Problem: "the lines end in a bare carriage return (\\r, classic Mac OS line endings), so the whole file reads as one line",
				Fix: "convert the line endings to \\n or \\r\\n (e.g. tr '\\r' '\\n' < in.csv > out.csv)"}
		}
		if strings.ContainsRune(h, 0) {
			return nil, &CSVError{File: file, Line: 1, Problem: fmt.Sprintf("column %d of the header holds a NUL byte (\\x00): the file is binary or UTF-16 text, not UTF-8", i+1),
				Fix: "save or convert the file as UTF-8 text (e.g. iconv -f UTF-16 -t UTF-8)"}
		}
	}
	header := make([]string, len(rec))
	copy(header, rec)
	header[0] = strings.TrimPrefix(header[0], "\uFEFF") // a UTF-8 byte order mark
	for i, h := range header {
		// Spaces around a name are dropped, as DuckDB's own header
		// detection does.
		header[i] = strings.TrimSpace(h)
	}
	seen := map[string]int{}
	for i, h := range header {
		if e := invalidUTF8(file, r, i, h); e != nil {
			return nil, e
		}
		if h == "" {
			return nil, &CSVError{File: file, Line: 1, Problem: fmt.Sprintf("column %d of the header has no name", i+1),
				Fix: "name every column in the header row"}
		}
		k := strings.ToLower(h)
		if j, ok := seen[k]; ok {
			if header[j] == h {
				return nil, &CSVError{File: file, Line: 1, Problem: fmt.Sprintf("columns %d and %d of the header are both named %q", j+1, i+1, h),
					Fix: "rename one of them"}
			}
			return nil, &CSVError{File: file, Line: 1, Problem: fmt.Sprintf("columns %d (%q) and %d (%q) of the header have the same name ignoring case", j+1, header[j], i+1, h),
				Fix: "rename one of them (column names are compared ignoring case)"}
		}
		seen[k] = i
	}
	return header, nil
}

// MaxRecordBytes is the longest CSV record (a data row, bytes) the
// engine reads: DuckDB's read_csv max_line_size, with a read buffer of the
// same size (what DuckDB's default buffer of 16 × its default 2 MB line
// uses), so memory does not grow with the option. A longer record is
// reported by [scanLong] with its line, column and length.
const MaxRecordBytes = 32 << 20

// recordLimit is the limit the engine applies, [MaxRecordBytes]; tests
// lower it to exercise long records with small files.
var recordLimit = MaxRecordBytes

// csvEvents receives what [lexCSV] reads.
type csvEvents interface {
	// value receives bytes of the current field's value: its text, plain
	// or quoted (an escaped quote as one "), never a line end's \r.
	value(b []byte) error
	// quoted says the current field opened a quote.
	quoted()
	// endField ends the current field (at a comma or a record's end).
	endField() error
	// endRecord ends the current record: a \n (or the end of the file)
	// after its last field, which endRecord ends itself.
	endRecord(l *csvLexer) error
}

// csvLexer is the state machine of synth's CSV dialect (comma, "-quotes,
// "" inside them, \r dropped outside quotes) that [scanLong] and
// [projectCSV] share: it streams the file through a fixed buffer, so a
// value's length never sets its memory.
type csvLexer struct {
	// Line is the line of the byte read; RecLine the line where the
	// record started; RecBytes the record's bytes read so far, its quotes,
	// commas and line end included.
	Line, RecLine int64
	RecBytes      int
	// strict makes text after a closing quote errNotProjected (else it
	// is read as unquoted text).
	strict bool
}

// lexCSV runs the lexer over r, calling ev. At the end of the file (not
// strict: at any read error) a record holding any byte ends (strict: an
// open quote there is errNotProjected).
func lexCSV(r io.Reader, ev csvEvents, strict bool) error {
	const (
		start  = iota // at the start of a field
		plain         // in an unquoted field
		quoted        // in a quoted field
		quote         // after a " in a quoted field
	)
	l := &csvLexer{Line: 1, RecLine: 1, strict: strict}
	state := start
	buf := make([]byte, 1<<20)
	endRecord := func() error {
		if err := ev.endField(); err != nil {
			return err
		}
		if err := ev.endRecord(l); err != nil {
			return err
		}
		l.Line++
		l.RecLine, l.RecBytes = l.Line, 0
		return nil
	}
	for {
		n, rerr := r.Read(buf)
		b := buf[:n]
		for i := 0; i < len(b); i++ {
			if state == quoted {
				// Jump to the next quote.
				j := bytes.IndexByte(b[i:], '"')
				end, skip := len(b), len(b)-i // the text, and the quote
				if j >= 0 {
					end, skip = i+j, j+1
					state = quote
				}
				l.Line += int64(bytes.Count(b[i:end], []byte{'\n'}))
				l.RecBytes += skip
				if err := ev.value(b[i:end]); err != nil {
					return err
				}
				i += skip - 1
				continue
			}
			l.RecBytes++
			switch c := b[i]; {
			case c == '"' && state == start:
				state = quoted
				ev.quoted()
			case c == '"' && state == quote:
				if err := ev.value(b[i : i+1]); err != nil { // an escaped quote
					return err
				}
				state = quoted
			case state == quote && strict && c != ',' && c != '\n' && c != '\r':
				return errNotProjected // text after a closing quote
			case c == ',':
				if err := ev.endField(); err != nil {
					return err
				}
				state = start
			case c == '\n':
				if err := endRecord(); err != nil {
					return err
				}
				state = start
			case c == '\r':
				// part of a line end
			default:
				if err := ev.value(b[i : i+1]); err != nil {
					return err
				}
				if state == start || state == quote {
					state = plain
				}
			}
		}
		if rerr != nil {
			if strict && !errors.Is(rerr, io.EOF) {
				return rerr // (scanLong ends the file at a read error too)
			}
			if strict && state == quoted {
				return errNotProjected
			}
			if l.RecBytes > 0 {
				return endRecord()
			}
			return nil
		}
	}
}

// scanLong streams a CSV source and returns a [*CSVError] for the first
// record longer than limit bytes, naming its line and its longest field's
// column and length, and saying whether synth reads that column; nil when
// every record fits (or the file does not open). Memory stays at the read
// buffer whatever the values' lengths. It follows the dialect of
// [newCSVReader] ([lexCSV]); a malformed quote is left to [scanCSV].
func scanLong(file string, header []string, read []bool, limit int) *CSVError {
	f, err := openCSV(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	s := &longScan{file: file, header: header, read: read, limit: limit, longField: -1, header1: true}
	var e *CSVError
	if errors.As(lexCSV(f, s, false), &e) {
		return e
	}
	return nil
}

// longScan is [scanLong]'s [csvEvents].
type longScan struct {
	file                string
	header              []string
	read                []bool
	limit               int
	field, fieldLen     int
	longField, longSize int
	longRead            int // the longest value of a column read
	header1             bool
}

func (s *longScan) value(b []byte) error { s.fieldLen += len(b); return nil }
func (s *longScan) quoted()              {}

func (s *longScan) endField() error {
	if s.fieldLen > s.longSize {
		s.longField, s.longSize = s.field, s.fieldLen
	}
	if s.field < len(s.read) && s.read[s.field] && s.fieldLen > s.longRead {
		s.longRead = s.fieldLen
	}
	s.field++
	s.fieldLen = 0
	return nil
}

// endRecord checks the record's length when it ends, so that the report
// gives its longest value's whole length.
func (s *longScan) endRecord(l *csvLexer) error {
	if l.RecBytes > s.limit && !s.header1 {
		return s.report(l.RecLine)
	}
	s.field, s.longField, s.longSize, s.longRead, s.header1 = 0, -1, 0, 0, false
	return nil
}

func (s *longScan) report(line int64) *CSVError {
	// A record of empty values only (commas, quotes) names its first
	// column (it indexed the header at -1 before).
	s.longField = max(s.longField, 0)
	name := fmt.Sprintf("column %d", s.longField+1)
	if s.longField < len(s.header) {
		name = fmt.Sprintf("column %q", s.header[s.longField])
	}
	// Without the columns not read the record fits, unless a value read
	// is itself too long.
	e := &CSVError{File: s.file, Line: line, undeclared: s.longRead <= s.limit}
	if s.longField < len(s.read) && s.read[s.longField] {
		e.Problem = fmt.Sprintf("a record of more than %d bytes: %s holds a value of %d bytes", s.limit, name, s.longSize)
		e.Fix = "synth reads records of at most " + strconv.Itoa(s.limit) + " bytes; a declared column's values are short (categories, numbers, dates, keys): check the quoting"
	} else {
		e.Problem = fmt.Sprintf("a record of more than %d bytes: %s, which the spec does not declare, holds a value of %d bytes", s.limit, name, s.longSize)
		e.Fix = "drop that column from the file (e.g. keep only the declared columns with DuckDB: COPY (SELECT ... FROM 'in.csv') TO 'out.csv'), or check the quoting"
	}
	return e
}

// scanCSV reads a whole CSV source and returns the first problem it finds
// as a [*CSVError], nil when there is none. It runs only after the engine
// failed to read the file: the engine's own messages count records, not
// lines, and name options synth does not have. Like DuckDB it accepts a "
// inside an unquoted field, and checks UTF-8 only in the header and in the
// columns read (read[i] for the i-th field).
func scanCSV(file string, fields int, read []bool) *CSVError {
	f, err := openCSV(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	r := newCSVReader(bufio.NewReaderSize(f, 1<<20))
	for first := true; ; first = false {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, csv.ErrBareQuote) {
			// DuckDB reads a " inside an unquoted field as a character:
			// not the problem it failed on.
			continue
		}
		if err != nil {
			return parseError(file, err)
		}
		for i, v := range rec {
			if (first || i < len(read) && read[i]) && !utf8.ValidString(v) {
				return invalidUTF8(file, r, i, v)
			}
		}
		if !first && len(rec) != fields {
			line, _ := r.FieldPos(0)
			return fieldCount(file, int64(line), len(rec), fields)
		}
	}
}

func fieldCount(file string, line int64, got, want int) *CSVError {
	return &CSVError{File: file, Line: line, Problem: fmt.Sprintf("%d fields, the header has %d", got, want), Fix: fixFields}
}

// invalidUTF8 returns a [*CSVError] when field i of the record just read
// holds bytes that are not UTF-8, naming the line of the first such byte.
func invalidUTF8(file string, r *csv.Reader, i int, v string) *CSVError {
	if utf8.ValidString(v) {
		return nil
	}
	k := 0
	for k < len(v) {
		c, n := utf8.DecodeRuneInString(v[k:])
		if c == utf8.RuneError && n <= 1 {
			break
		}
		k += n
	}
	line, _ := r.FieldPos(i)
	return &CSVError{File: file, Line: int64(line + strings.Count(v[:k], "\n")), Problem: "not valid UTF-8", Fix: fixUTF8}
}

// parseError maps a parse error of encoding/csv to a [*CSVError], nil for
// any other error.
func parseError(file string, err error) *CSVError {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return nil
	}
	e := &CSVError{File: file, Line: int64(pe.StartLine)}
	switch {
	case errors.Is(pe.Err, csv.ErrBareQuote):
		e.Problem, e.Fix = `a " inside an unquoted field`, `quote the field and double the " inside it`
	case errors.Is(pe.Err, csv.ErrQuote):
		e.Problem, e.Fix = "unterminated or malformed quoted field", fixQuote
	default:
		e.Problem = pe.Err.Error()
	}
	return e
}

// duckCSVLine finds the line number in DuckDB's CSV error messages.
var duckCSVLine = regexp.MustCompile(`CSV Error on Line: ([0-9]+)`)

// duckCSVFields finds the field counts in DuckDB's CSV error messages.
var duckCSVFields = regexp.MustCompile(`Expected Number of Columns: ([0-9]+) Found: ([0-9]+)`)

// csvReadError maps an error of the engine reading a CSV source to a
// one-line [*CSVError]: the first problem a full read with encoding/csv
// finds, else what DuckDB's message says (its line counts records, which
// differs from the file's line after a quoted field holding a newline),
// else the first line of the message.
func csvReadError(file string, header, cols []string, err error) error {
	read := make([]bool, len(header))
	for i, h := range header {
		read[i] = slices.Contains(cols, h)
	}
	// A record too long for the engine first: encoding/csv would hold it
	// whole in memory (gigabytes for one long value).
	if e := scanLong(file, header, read, recordLimit); e != nil {
		return e
	}
	if e := scanCSV(file, len(header), read); e != nil {
		return e
	}
	msg := err.Error()
	e := &CSVError{File: file}
	if m := duckCSVLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.ParseInt(m[1], 10, 64)
	}
	switch m := duckCSVFields.FindStringSubmatch(msg); {
	case m != nil:
		want, _ := strconv.Atoi(m[1])
		got, _ := strconv.Atoi(m[2])
		return fieldCount(file, e.Line, got, want)
	case strings.Contains(msg, "unterminated quote"):
		e.Problem, e.Fix = "unterminated or malformed quoted field", fixQuote
	case strings.Contains(msg, "Invalid unicode"):
		e.Problem, e.Fix = "not valid UTF-8", fixUTF8
	default:
		first, _, _ := strings.Cut(msg, "\n")
		e.Problem = "cannot read the file: " + strings.TrimSpace(strings.TrimPrefix(first, "Invalid Input Error: "))
	}
	return e
}

// projectCSV writes to dst the columns of the CSV source file named by
// keep (header positions) in their order, record for record, so that a
// record's data row is the same in both files. It streams, holding one
// declared field at a time: a value of a column not kept is skipped
// whatever its length, a kept value longer than limit bytes is a
// [*CSVError] naming the file, line, column and length. A field is written
// quoted when it was quoted in the source, its quotes doubled. It returns
// errNotProjected when the file does not follow synth's dialect (a
// record with another number of fields than the header, a malformed
// quote): the caller reports the source's own error instead.
func projectCSV(file string, header []string, keep []int, dst io.Writer, limit int) error {
	f, err := openCSV(file)
	if err != nil {
		return err
	}
	defer f.Close()
	p := &projection{file: file, header: header, limit: limit, w: bufio.NewWriterSize(dst, 1<<20),
		out: make([]int, len(header)), rec: make([][]byte, len(keep)), recQuoted: make([]bool, len(keep)), recLine: 1}
	for i := range p.out {
		p.out[i] = -1 // skipped
	}
	for k, i := range keep {
		p.out[i] = k
	}
	if err := lexCSV(f, p, true); err != nil {
		return err
	}
	return p.w.Flush()
}

// projection is [projectCSV]'s [csvEvents].
type projection struct {
	file      string
	header    []string
	limit     int
	w         *bufio.Writer
	out       []int // position in the output, -1 when skipped
	field     int
	val       []byte // the kept field's value
	wasQuoted bool
	rec       [][]byte
	recQuoted []bool
	recLine   int64 // the line of the record, for errors
}

func (p *projection) kept() bool { return p.field < len(p.out) && p.out[p.field] >= 0 }

func (p *projection) quoted() { p.wasQuoted = true }

func (p *projection) value(b []byte) error {
	if !p.kept() {
		return nil
	}
	if len(p.val)+len(b) > p.limit {
		return &CSVError{File: p.file, Line: p.recLine,
			Problem: fmt.Sprintf("a value of more than %d bytes in column %q", p.limit, p.header[p.field]),
			Fix:     "synth reads values of at most " + strconv.Itoa(p.limit) + " bytes in a declared column; a declared column's values are short (categories, numbers, dates, keys): check the quoting"}
	}
	p.val = append(p.val, b...)
	return nil
}

func (p *projection) endField() error {
	if p.kept() {
		p.rec[p.out[p.field]] = append(p.rec[p.out[p.field]][:0], p.val...)
		p.recQuoted[p.out[p.field]] = p.wasQuoted
	}
	p.field++
	p.val, p.wasQuoted = p.val[:0], false
	return nil
}

func (p *projection) endRecord(l *csvLexer) error {
	if p.field != len(p.header) {
		return errNotProjected
	}
	w := p.w
	for k := range p.rec {
		if k > 0 {
			w.WriteByte(',')
		}
		if p.recQuoted[k] {
			w.WriteByte('"')
			w.Write(bytes.ReplaceAll(p.rec[k], []byte{'"'}, []byte{'"', '"'}))
			w.WriteByte('"')
		} else {
			w.Write(p.rec[k])
		}
	}
	w.WriteByte('\n')
	p.field, p.recLine = 0, l.Line+1
	return nil
}

// errNotProjected is [projectCSV]'s report of a file outside synth's CSV
// dialect.
var errNotProjected = errors.New("engine: the CSV source does not follow the dialect")

// fileKind names what a source that is not a regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// verifyCompressed reads a compressed CSV source to its end through Go's
// decoders, which check the gzip members' CRC-32 and length and the
// Zstandard frames' checksums, and fails naming the file when the stream
// is truncated or damaged. DuckDB's read_csv stops quietly at the end of a
// truncated gzip stream and does not check its CRC: without this check a
// cut download would load as a smaller, plausible table. It costs one
// extra decompression of the file (no parsing).
func verifyCompressed(ctx context.Context, t *spec.Table) error {
	if format(t) != "csv" || csvCompression(t.Source) == "none" {
		return nil
	}
	f, err := openCSV(t.Source)
	if err != nil {
		return &fileError{table: t.Name, file: t.Source, msg: "cannot read the source", err: err}
	}
	defer f.Close()
	buf := make([]byte, 1<<16)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("engine: load: %w", err)
		}
		_, err := f.Read(buf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			what := "gzip"
			if csvCompression(t.Source) == "zstd" {
				what = "Zstandard"
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return &fileError{table: t.Name, file: t.Source, msg: "the " + what + " stream is truncated (the file ends before the compressed data does): " +
					"recopy or re-download the file; a partial file would load as a smaller table", err: err}
			}
			return &fileError{table: t.Name, file: t.Source, msg: "the " + what + " stream is damaged (its checksum or framing does not verify): " +
				"recopy or re-download the file", err: err}
		}
	}
}
