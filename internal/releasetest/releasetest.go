// Package releasetest holds test helpers shared by the tests of the
// release packages (release, release/publish, release/synthfile, workload)
// and the packages that read their output. It is imported by tests only.
package releasetest

import (
	"os"
	"reflect"
	"testing"
)

// AssertOnly fails t unless dir holds exactly the named entries, given in
// name order (the order of [os.ReadDir]).
func AssertOnly(t testing.TB, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) || (len(got) > 0 && !reflect.DeepEqual(got, names)) {
		t.Errorf("folder holds %q, want %q", got, names)
	}
}
