package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// TestWriteFilesRoundTrip: the written synth.yaml loads, and describes the
// same tables, domains, join, release and workload as the spec Write
// returns, over the same data.
func TestWriteFilesRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "instance")
	path, err := WriteFiles(dir, 16, 2, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	got, err := spec.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, readFile(t, path))
	}
	want, err := Write(t.TempDir(), 16, 2, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if got.Privacy.Epsilon != 2 || got.Privacy.Delta != 1e-6 {
		t.Errorf("privacy %+v", got.Privacy)
	}
	if len(got.Tables) != len(want.Tables) {
		t.Fatalf("%d tables, want %d", len(got.Tables), len(want.Tables))
	}
	for i := range want.Tables {
		g, w := got.Tables[i], want.Tables[i]
		if g.Name != w.Name || filepath.Base(g.Source) != filepath.Base(w.Source) || !reflect.DeepEqual(g.PrimaryKey, w.PrimaryKey) {
			t.Errorf("table %d: %s %s %v, want %s %s %v", i, g.Name, g.Source, g.PrimaryKey, w.Name, w.Source, w.PrimaryKey)
		}
		if !bytes.Equal(readFile(t, g.Source), readFile(t, w.Source)) {
			t.Errorf("table %s: the data differ from Write's", w.Name)
		}
		for j, wc := range w.Columns {
			gc := g.Columns[j]
			if gc.Name != wc.Name || gc.Type != wc.Type || !reflect.DeepEqual(gc.Values, wc.Values) || gc.Min != wc.Min || gc.Max != wc.Max ||
				gc.Bins != wc.Bins || gc.Size() != wc.Size() {
				t.Errorf("column %s.%s: %+v, want %+v", w.Name, wc.Name, gc, wc)
			}
		}
	}
	if !reflect.DeepEqual(got.Join, want.Join) || !reflect.DeepEqual(got.Release.Columns, want.Release.Columns) ||
		got.Release.Method != want.Release.Method || !reflect.DeepEqual(got.Workload.Marginals, want.Workload.Marginals) {
		t.Errorf("join, release or workload differ:\n%s", readFile(t, path))
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
