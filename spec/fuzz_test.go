package spec

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error it returns
// wraps ErrInvalid as an *Error, and that every spec it accepts keeps the
// invariants the rest of synth relies on. The seed corpus is the example
// specs, the SDV example and every bad case of TestParseBad; regression
// inputs live in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, path := range []string{"../examples/tpch/synth.yaml", "../examples/adult/synth.yaml", "testdata/sdv/synth.yaml"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(withLine(1, baseLines[0])))
	for _, tc := range badCases() {
		f.Add([]byte(tc.spec))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var e *Error
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not a *spec.Error wrapping ErrInvalid", err, err)
			}
			if s != nil {
				t.Fatal("non-nil spec with an error")
			}
			if e.File == "" {
				t.Fatalf("error %v names no file", err)
			}
			return
		}
		checkInvariants(t, s)
	})
}

// checkInvariants checks what a parsed spec promises.
func checkInvariants(t *testing.T, s *Spec) {
	t.Helper()
	if s.Privacy.Epsilon <= 0 || s.Privacy.Delta < 0 || s.Privacy.Delta >= 1 {
		t.Fatalf("bad budget %+v", s.Privacy)
	}
	if _, err := s.Hypergraph(); err != nil {
		t.Fatalf("accepted spec has no hypergraph: %v", err)
	}
	if _, ok := s.UniverseSize(); !ok {
		t.Fatal("accepted spec overflows")
	}
	if len(s.Release.Columns) == 0 {
		t.Fatal("no released column")
	}
	for _, tab := range s.Tables {
		for i := range tab.Columns {
			c := &tab.Columns[i]
			if c.Type == Key {
				continue
			}
			if n := c.Size(); n <= 0 || n > MaxColumnSize {
				t.Fatalf("column %s: size %d", c.Name, n)
			}
			if c.Type == Integer || c.Type == Numeric {
				e := c.Edges()
				if len(e) != c.Size()+1 {
					t.Fatalf("column %s: %d edges for %d bins", c.Name, len(e), c.Size())
				}
			}
		}
	}
	for _, c := range s.ReleaseColumns() {
		if c == nil || c.Type == Key {
			t.Fatalf("bad released column %+v", c)
		}
	}
}

func TestExamplesKeepInvariants(t *testing.T) {
	for _, path := range []string{"../examples/tpch/synth.yaml", "../examples/adult/synth.yaml", "testdata/sdv/synth.yaml"} {
		s, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, s)
	}
}
