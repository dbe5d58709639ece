package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadCSVErrors: a CSV source that does not parse is a one-line
// *CSVError naming the file and the line where the bad record starts.
func TestLoadCSVErrors(t *testing.T) { forEachOpener(t, testLoadCSVErrors) }

func testLoadCSVErrors(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	hdr := strings.Join(ordersHeader, ",") + "\n"
	good := "1,plain,100.5,1,1-URGENT,2020-01-01,true\n"
	twoLines := "2,\"two\nlines\",600000,50,2-HIGH,2020-12-31,F\n" // lines 3 and 4 after hdr, good
	for _, tc := range []struct {
		name, data string
		line       int64
		want       string
	}{
		{"too many fields", hdr + good + good + "3,x,1,1,1-URGENT,2020-01-01,t,extra\n", 4,
			"8 fields, the header has 7: check quoting or the delimiter"},
		{"too few fields", hdr + good + good + "3,x,1\n" + good, 4, "3 fields, the header has 7"},
		{"too few fields after a field holding a newline", hdr + good + twoLines + "3,x,1\n", 5, "3 fields, the header has 7"},
		{"unterminated quote", hdr + good + "3,\"open,1,1,1-URGENT,2020-01-01,t\n" + good + good, 3,
			"unterminated or malformed quoted field"},
		{"text after a closing quote", hdr + good + "3,\"x\"y,1,1,1-URGENT,2020-01-01,t\n" + good, 3,
			"unterminated or malformed quoted field"},
		{"too few fields after a quote inside an unquoted field", hdr + "3,x\"y,1,1,1-URGENT,2020-01-01,t\n" + good + "3,x,1\n", 4,
			"3 fields, the header has 7"},
		{"invalid UTF-8", hdr + good + good + "caf\xe9,x,1,1,1-URGENT,2020-01-01,t\n" + good, 4,
			"not valid UTF-8: convert the file to UTF-8"},
		{"invalid UTF-8 after a field holding a newline", hdr + twoLines + good + "caf\xe9,x,1,1,1-URGENT,2020-01-01,t\n", 5,
			"not valid UTF-8"},
		{"invalid UTF-8 on the second line of a field", hdr + good + "\"ok\ncaf\xff\",x,1,1,1-URGENT,2020-01-01,t\n", 4,
			"not valid UTF-8"},
		{"too few fields after bytes that are not UTF-8 in a column not declared", hdr + "1,caf\xe9,1,1,1-URGENT,2020-01-01,t\n" + "3,x,1\n", 3,
			"3 fields, the header has 7"},
		{"invalid UTF-8 in the header", strings.Replace(hdr, "o_comment", "o_comm\xffent", 1) + good, 1, "not valid UTF-8"},
		{"duplicate header names", strings.TrimSuffix(hdr, "\n") + ",o_comment\n" + good, 1,
			`columns 2 and 8 of the header are both named "o_comment": rename one of them`},
		{"header names equal ignoring case", strings.TrimSuffix(hdr, "\n") + ",O_QTY\n" + good, 1,
			`columns 4 ("o_qty") and 8 ("O_QTY") of the header have the same name ignoring case`},
		{"unnamed header column", strings.TrimSuffix(hdr, "\n") + ",\n" + strings.TrimSuffix(good, "\n") + ",x\n", 1,
			"column 8 of the header has no name"},
		{"empty file", "", 1, "the file is empty"},
		// Issue 36: these reported duplicate or missing names.
		{"bare carriage returns", strings.ReplaceAll(hdr+good+good, "\n", "\r"), 1, "the lines end in a bare carriage return"},
		{"NUL in the header", strings.Replace(hdr, "o_qty", "o_\x00qty", 1) + good, 1, "column 4 of the header holds a NUL byte"},
		{"UTF-16 text", "\xff\xfe" + strings.Join(strings.Split(hdr+good, ""), "\x00"), 1, "binary or UTF-16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "orders.csv")
			if err := os.WriteFile(src, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			e := openTest(t)
			skipBareQuote(t, e, tc.name)
			err := e.Load(ctx, ordersSpec(src, nil))
			var ce *CSVError
			if !errors.As(err, &ce) {
				t.Fatalf("Load = %v (%T), want a *CSVError", err, err)
			}
			if !errors.Is(err, ErrData) {
				t.Errorf("Load = %v, not ErrData", err)
			}
			if ce.File != src || ce.Line != tc.line {
				t.Errorf("CSVError at %s line %d, want %s line %d (%v)", ce.File, ce.Line, src, tc.line, err)
			}
			msg := err.Error()
			if prefix := fmt.Sprintf("%s line %d: ", src, tc.line); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.want) {
				t.Errorf("message %q, want %q… holding %q", msg, prefix, tc.want)
			}
			if strings.ContainsAny(msg, "\r\n") {
				t.Errorf("message spans several lines: %q", msg)
			}
			assertNoTables(t, e)
		})
	}
}

// TestLoadCSVHeaderOnly: a header without rows is an empty table, not an
// error; a " inside an unquoted field (read as a character, as DuckDB
// does), bytes that are not UTF-8 in a column the spec does not declare
// (never read), a UTF-8 byte order mark, CRLF line ends, a last line without a
// newline, blank lines and a line starting with # are read as they are.
func TestLoadCSVHeaderOnly(t *testing.T) { forEachOpener(t, testLoadCSVHeaderOnly) }

func testLoadCSVHeaderOnly(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	hdr := strings.Join(ordersHeader, ",")
	for _, tc := range []struct {
		name, data string
		rows       int64
	}{
		{"header only", hdr + "\n", 0},
		{"header only, no newline", hdr, 0},
		{"byte order mark and CRLF", "\uFEFF" + hdr + "\r\n1,x,1,1,1-URGENT,2020-01-01,t\r\n", 1},
		{"no final newline", hdr + "\n1,x,1,1,1-URGENT,2020-01-01,t", 1},
		{"blank lines", hdr + "\n\n1,x,1,1,1-URGENT,2020-01-01,t\n\n", 1},
		{"hash is data", hdr + "\n#1,x,1,1,1-URGENT,2020-01-01,t\n", 1},
		{"spaces around header names", strings.ReplaceAll(hdr, ",", " , ") + "\n1,x,1,1,1-URGENT,2020-01-01,t\n", 1},
		{"quote inside an unquoted field", hdr + "\n1,x\"y,1,1,1-URGENT,2020-01-01,t\n", 1},
		{"bytes that are not UTF-8 in a column not declared", hdr + "\n1,caf\xe9,1,1,1-URGENT,2020-01-01,t\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "orders.csv")
			if err := os.WriteFile(src, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			e := openTest(t)
			skipBareQuote(t, e, tc.name)
			if err := e.Load(ctx, ordersSpec(src, nil)); err != nil {
				t.Fatal(err)
			}
			if n := tableCount(t, e, "orders"); n != tc.rows {
				t.Errorf("%d rows, want %d", n, tc.rows)
			}
		})
	}
}

// skipBareQuote skips the cases of a " inside an unquoted field on
// PostgreSQL: DuckDB reads the quote as a character, the PostgreSQL
// engine's loader (encoding/csv, strict) stops with a *CSVError naming it
// (see postgres.stage); TestPostgresBareQuote checks that error.
func skipBareQuote(t *testing.T, e *Engine, name string) {
	t.Helper()
	if _, pg := e.d.(postgres); pg && strings.Contains(name, "quote inside an unquoted field") {
		t.Skip("PostgreSQL's loader rejects a \" inside an unquoted field (DuckDB reads it as a character)")
	}
}
