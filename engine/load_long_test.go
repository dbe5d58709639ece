package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// writeLongCSV writes orders with a value of size bytes in column col of
// data row 2 (line 3), streaming it so that the test's memory stays small.
func writeLongCSV(t *testing.T, col string, size int64) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "orders.csv")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, strings.Join(ordersHeader, ","))
	fmt.Fprintln(w, "1,plain,100.5,1,1-URGENT,2020-01-01,true")
	fields := []string{"2", "c", "600000", "50", "2-HIGH", "2020-12-31", "F"}
	for i, h := range ordersHeader {
		if i > 0 {
			w.WriteByte(',')
		}
		if h != col {
			w.WriteString(fields[i])
			continue
		}
		// A quoted value with a newline, a comma and an escaped quote.
		w.WriteString(`"a` + "\n" + `,""`)
		chunk := strings.Repeat("x", 1<<16)
		for n := int64(4); n < size; n += int64(len(chunk)) {
			w.WriteString(chunk[:min(int64(len(chunk)), size-n)])
		}
		w.WriteByte('"')
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "3,,0,17,3-MEDIUM,2020-06-15,0")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return src
}

// TestLoadLongValues: a long value in a column the spec does not declare
// loads whatever its length (DuckDB's default stopped at 2 MB, and records
// longer than MaxRecordBytes were refused), without being held in memory;
// a declared column's value longer than MaxRecordBytes is one *CSVError
// naming the file, line, column and length, found without holding the
// value in memory (encoding/csv held it whole and then reported a false
// "unterminated quoted field").
//
// The limit is lowered to 1 MiB so that the files stay small, unless
// SYNTH_TEST_HUGE is set: then the engine's own limit and a value past
// 2 GiB, as in issue 28.
func TestLoadLongValues(t *testing.T) {
	ctx := context.Background()
	limit, size := 1<<20, int64(6<<20)
	if os.Getenv("SYNTH_TEST_HUGE") != "" {
		limit, size = MaxRecordBytes, 2<<30+12345
	}
	defer func(l int) { recordLimit = l }(recordLimit)
	recordLimit = limit
	for _, tc := range []struct {
		name string
		col  string
		size int64
		want string // the error, "" for a load of the three rows
	}{
		{"short undeclared loads", "o_comment", int64(limit) / 2, ""},
		{"long undeclared loads", "o_comment", size, ""},
		{"long declared", "o_prio", size, fmt.Sprintf(`line 3: a record of more than %d bytes: column "o_prio" holds a value of %d bytes`, limit, size)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := writeLongCSV(t, tc.col, tc.size)
			e := openTest(t)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := e.Load(ctx, ordersSpec(src, nil))
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(tc.size)/2+4<<20 {
				t.Errorf("the load allocated %d MB in Go for a %d MB value: it must stream", alloc>>20, tc.size>>20)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if n := tableCount(t, e, "orders"); n != 3 {
					t.Fatalf("%d rows, want 3", n)
				}
				return
			}
			var ce *CSVError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), src+" "+tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
	t.Run("bad value after a long undeclared one", func(t *testing.T) {
		// The copy without the long column keeps the rows: the error names
		// the source, the data row and the value.
		src := writeLongCSV(t, "o_comment", size)
		err := openTest(t).Load(ctx, ordersSpec(src, func(cols []spec.Column) { column(cols, "o_qty").Max = 40 }))
		var de *DataError
		if !errors.As(err, &de) || de.File != src || de.Row != 2 || de.Column != "o_qty" || de.Value != "50" {
			t.Fatalf("got %v, want a DataError naming %s row 2 column o_qty value 50", err, src)
		}
	})
}
