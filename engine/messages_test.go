package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// A category written in NFD against an NFC declaration prints the same on
// a terminal: the message says that it differs only in normalisation and
// spells both with escapes.
func TestLoadCategoryNormalisation(t *testing.T) { forEachOpener(t, testLoadCategoryNormalisation) }

func testLoadCategoryNormalisation(t *testing.T, openTest func(testing.TB) *Engine) {
	nfc, nfd := "caf\u00e9", "cafe\u0301"
	src := writeCSV(t, t.TempDir(), "orders.csv", ordersHeader, set(1, "o_prio", nfd))
	s := ordersSpec(src, func(cols []spec.Column) {
		column(cols, "o_prio").Values = []string{nfc, "2-HIGH", "3-MEDIUM", "1-URGENT"}
	})
	err := openTest(t).Load(context.Background(), s)
	var de *DataError
	if !errors.As(err, &de) {
		t.Fatalf("got %v, want a *DataError", err)
	}
	for _, want := range []string{"differs only in Unicode normalisation", `"cafe\u0301", NFD`, `"caf\u00e9", NFC`, "row 1, column o_prio"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%v", want, err)
		}
	}
	// A value that is simply not a category keeps the plain message.
	src = writeCSV(t, t.TempDir(), "orders.csv", ordersHeader, set(1, "o_prio", "tea"))
	err = openTest(t).Load(context.Background(), ordersSpec(src, nil))
	if !errors.As(err, &de) || de.Problem != "is not a declared category" {
		t.Fatalf("got %v", err)
	}
}

// A tab- or semicolon-separated file reads as one column: the missing
// column error says which separator the header seems to use.
func TestLoadDelimiterHint(t *testing.T) {
	for _, tc := range []struct{ sep, name string }{{"\t", "tabs"}, {";", "semicolons"}} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "orders.csv")
			data := strings.Join(ordersHeader, tc.sep) + "\n" + strings.Join(ordersRows()[0], tc.sep) + "\n"
			if err := os.WriteFile(src, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			err := openTest(t).Load(context.Background(), ordersSpec(src, nil))
			if !errors.Is(err, ErrData) || !strings.Contains(err.Error(), "looks separated by "+tc.name) || !strings.Contains(err.Error(), "comma-separated") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// An engine that runs out of scratch disk or memory is not a file that
// cannot be read.
func TestReadErrorResources(t *testing.T) {
	tab := &spec.Table{Name: "orders", Source: "orders.csv"}
	header := []string{"a"}
	for _, tc := range []struct {
		err  error
		disk bool
	}{
		{errors.New("IO Error: Could not write file \"/tmp/synth-x/duckdb_temp_storage-0.tmp\": No space left on device"), true},
		{fmt.Errorf("write: %w", syscall.ENOSPC), true},
		{errors.New("Out of Memory Error: could not allocate block of size 32.0 MiB (4.0 KiB/19.0 MiB used)\n\nPossible solutions:\n* Reducing the number of threads (SET threads=X)"), false},
	} {
		err := readError(tab, header, header, tc.err)
		var re *ResourceError
		if !errors.As(err, &re) || re.Disk != tc.disk || !errors.Is(err, ErrResource) || errors.Is(err, ErrData) ||
			strings.Contains(err.Error(), "cannot read") || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "table orders") {
			t.Errorf("%v: got %v", tc.err, err)
		}
	}
}
