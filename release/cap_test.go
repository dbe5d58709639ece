package release

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

// capSpec is a spec whose universe is small (x: 2000 bins × g: 2) but
// whose range family over x by g is not: its 2,001,000 (lo, hi) pairs take
// 32 MB. Its source does not exist.
const capSpec = `
privacy: {epsilon: 1.0, delta: 1e-6}
tables:
  - name: t
    source: missing.csv
    primary_key: id
    columns:
      id: {type: key}
      x: {type: integer, min: 0, max: 1999}
      g: {type: categorical, values: [a, b]}
release:
  columns: [x, g]
workload:
  ranges:
    - {column: x, by: [g]}
pmw: {model: dense}
`

// TestMemoryCapBeforeData: a workload whose arrays exceed the memory cap
// is refused before the engine is opened or a source read — the error is
// the cap's, not the missing file's — and the message gives the need and
// the cap in exact bytes, the need above the cap. Before the check moved
// up front, this run reached the load and failed on the missing source.
func TestMemoryCapBeforeData(t *testing.T) {
	dir := t.TempDir()
	s, err := spec.Parse([]byte(capSpec), filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	const memCap = 16 << 20
	_, err = Run(context.Background(), Options{Spec: s, OutDir: out, Engine: "duckdb", Source: dp.NewSeededSource(1), MemoryCap: memCap})
	var tl *pmw.TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("Run = %v, want the memory cap's TooLargeError before the source is read", err)
	}
	if tl.Bytes <= memCap || tl.Cap != memCap {
		t.Errorf("need %d, cap %d: want a need above the cap %d", tl.Bytes, tl.Cap, memCap)
	}
	for _, w := range []string{"need 32608128 B", "memory cap of 16777216 B", "range pairs 32016000 B", "histogram 128000 B"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("output folder after the refusal: %v, want none", err)
	}
	// With room for the pairs, the same spec gets past the check and fails
	// where it should: on the missing source.
	_, err = Run(context.Background(), Options{Spec: s, OutDir: out, Engine: "duckdb", Source: dp.NewSeededSource(1), MemoryCap: 64 << 20})
	if err == nil || errors.Is(err, pmw.ErrTooLarge) || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("Run under a 64 MiB cap = %v, want an error about missing.csv", err)
	}
}

// TestMemoryCapMatchesRun: for the examples' specs, the count Run checks
// up front is at least the one pmw.Run checks after the statistics
// (pmw's own tests show it is the same count), and the cap at that count
// lets the release through.
func TestMemoryCapMatchesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a release")
	}
	s := releasetest.LoadSpec(t, filepath.Join("..", "examples", "tpch", "synth.yaml"))
	mem := planMemory(t, s, pmw.Config{Variant: pmw.Variant(s.PMW.Variant)})
	for _, c := range []struct {
		memCap int64
		ok     bool
	}{{mem.Total(), true}, {mem.Total() - 1, false}} {
		_, err := Run(context.Background(), Options{Spec: s, OutDir: filepath.Join(t.TempDir(), "out"), Engine: "duckdb",
			Source: dp.NewSeededSource(1), MemoryCap: c.memCap})
		if c.ok && err != nil {
			t.Errorf("cap = planned need %d: %v", c.memCap, err)
		}
		if !c.ok && !errors.Is(err, pmw.ErrTooLarge) {
			t.Errorf("cap = planned need − 1: %v, want ErrTooLarge", err)
		}
	}
}

// capSpecTwo is a two-table spec (uniformized by default) over the
// universe x: 2000 bins × g: 2; its sources do not exist.
const capSpecTwo = `
privacy: {epsilon: 1.0, delta: 1e-6}
tables:
  - name: p
    source: missing-p.csv
    primary_key: id
    columns:
      id: {type: key}
      g: {type: categorical, values: [a, b]}
  - name: c
    source: missing-c.csv
    primary_key: [pid, n]
    columns:
      pid: {type: key}
      n: {type: key}
      x: {type: integer, min: 0, max: 1999}
join:
  - c.pid = p.id
release:
  method: uniformized
  columns: [g, x]
workload:
  marginals: [[g], [x]]
`

// TestMemoryCapCountsMergedCounts: a uniformized release adds its
// sub-instances' counts into one dense array (8 B a cell) beside the PMW
// run; the cap counts it before any data is read. Under a cap one array
// short of the need the release is refused with the part named; at the
// need it gets past the check and fails on the missing source. Before the
// count had the part, the first run got past the check.
func TestMemoryCapCountsMergedCounts(t *testing.T) {
	dir := t.TempDir()
	s, err := spec.Parse([]byte(capSpecTwo), filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mem := planMemory(t, s, pmw.Config{Variant: pmw.Variant(s.PMW.Variant), MergeCounts: true})
	if mem.Merged != 8*4000 || mem.Histogram < 32*4000 {
		t.Fatalf("plan %+v: want merged counts 32000 B and a histogram of at least 128000 B", mem)
	}
	out := filepath.Join(dir, "out")
	_, err = Run(context.Background(), Options{Spec: s, OutDir: out, Engine: "duckdb", Source: dp.NewSeededSource(1), MemoryCap: mem.Total() - mem.Merged})
	if !errors.Is(err, pmw.ErrTooLarge) || !strings.Contains(err.Error(), "merged counts 32000 B") {
		t.Errorf("Run under the cap without the merged counts = %v, want ErrTooLarge naming them", err)
	}
	_, err = Run(context.Background(), Options{Spec: s, OutDir: out, Engine: "duckdb", Source: dp.NewSeededSource(1), MemoryCap: mem.Total()})
	if err == nil || errors.Is(err, pmw.ErrTooLarge) || !strings.Contains(err.Error(), "missing-") {
		t.Errorf("Run under the planned cap = %v, want an error about a missing source", err)
	}
}

// planMemory is pmw.PlanMemory of s's universe and workload under cfg.
func planMemory(t *testing.T, s *spec.Spec, cfg pmw.Config) pmw.Memory {
	t.Helper()
	u, err := pmw.NewUniverse(layout.ColumnNames(s), s.ReleaseSizes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := workload.Families(s)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := pmw.PlanMemory(u, fams, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return mem
}
