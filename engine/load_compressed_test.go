package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestLoadCompressedCSV: .csv.gz and .csv.zst sources load like the plain
// file (the spec documents them); a file whose name says compressed but
// whose bytes are not is a one-line error naming the file.
func TestLoadCompressedCSV(t *testing.T) { forEachOpener(t, testLoadCompressedCSV) }

func testLoadCompressedCSV(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	var plain bytes.Buffer
	w := csv.NewWriter(&plain)
	_ = w.Write(ordersHeader)
	_ = w.WriteAll(ordersRows())
	dir := t.TempDir()
	ref := ordersSpec(writeCSV(t, dir, "orders.csv", ordersHeader, ordersRows()), nil)
	e := openTest(t)
	if err := e.Load(ctx, ref); err != nil {
		t.Fatal(err)
	}
	want := singleHistogram(t, e, ref, "o_prio")

	compress := map[string]func(io.Writer) io.WriteCloser{
		"orders.csv.gz": func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) },
		"orders.CSV.ZST": func(w io.Writer) io.WriteCloser {
			z, err := zstd.NewWriter(w)
			if err != nil {
				t.Fatal(err)
			}
			return z
		},
	}
	for name, newWriter := range compress {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			z := newWriter(&buf)
			if _, err := z.Write(plain.Bytes()); err != nil {
				t.Fatal(err)
			}
			if err := z.Close(); err != nil {
				t.Fatal(err)
			}
			src := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(src, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			s := ordersSpec(src, nil)
			e := openTest(t)
			if err := e.Load(ctx, s); err != nil {
				t.Fatalf("load %s: %v", name, err)
			}
			if n := tableCount(t, e, "orders"); n != int64(len(ordersRows())) {
				t.Fatalf("%d rows loaded, want %d", n, len(ordersRows()))
			}
			if got := singleHistogram(t, e, s, "o_prio"); !slices.Equal(got, want) {
				t.Fatalf("histogram %v, want %v", got, want)
			}

			// The same name over uncompressed bytes.
			fake := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(fake, plain.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			err := openTest(t).Load(ctx, ordersSpec(fake, nil))
			if !errors.Is(err, ErrData) || !strings.Contains(err.Error(), fake) || strings.Contains(err.Error(), "\n") ||
				!strings.Contains(err.Error(), "not a") {
				t.Fatalf("a %s file that is not compressed: got %v", name, err)
			}
		})
	}
}
