// Package synthfiletest writes synthetic files for the tests of the
// packages that read them (workload, internal/report). It is imported by
// tests only, never by those of output/synthfile or the packages below it
// (it imports synthfile).
package synthfiletest

import (
	"context"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/spec"
)

// WriteHistogram writes the histogram cells (over the universe of s's
// released columns, in increasing cell order) as the synthetic file at
// path, the way a release writes its counts, with report as its privacy
// report metadata.
func WriteHistogram(t testing.TB, s *spec.Spec, path string, cells []engine.Cell, report string) {
	t.Helper()
	w, err := synthfile.NewWriter(path, layout.ColumnNames(s), s.ReleaseColumns(), map[string]string{layout.MetadataKey: report})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, c := range cells {
		if err := w.Add(context.Background(), c.Index, c.Count); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
