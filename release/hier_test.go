package release

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/hiergen"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/uniformize"
)

// TestHierUniformizedRelease runs release.method: uniformized on the
// three-relation hierarchical example of internal/hiergen and checks what
// the report must say: the algorithm, the attribute tree, the public
// bounds K and K_deg, every sub-instance's configuration, DP n̂, Δ̃ and
// budget (ε/(2K), δ/(2K)), and that the rows written are the union of the
// sub-instances' DP rows. Same seed, same release.
func TestHierUniformizedRelease(t *testing.T) {
	dir := t.TempDir()
	path, err := hiergen.Write(dir, 16, 4, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Release.Method != spec.Uniformized {
		t.Fatalf("method %q", s.Release.Method)
	}
	ctx := context.Background()
	run := func() *Summary {
		sum, err := Run(ctx, Options{Spec: s, OutDir: filepath.Join(t.TempDir(), "out"), Engine: "duckdb", Source: dp.NewSeededSource(5)})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	sum := run()
	p := sum.Privacy.Parameters
	if sum.Privacy.Mechanism != uniformize.HierAlgorithm {
		t.Errorf("mechanism %q", sum.Privacy.Mechanism)
	}
	parts, ok := p["uniformized_partitions"].([]uniformize.HierSubRun)
	if !ok || len(parts) == 0 {
		t.Fatalf("partitions %#v", p["uniformized_partitions"])
	}
	K, _ := p["uniformized_k"].(int64)
	levels, _ := p["uniformized_levels"].(int)
	// Tree store_id → member_id: staff misses member_id, so K = L.
	if levels != uniformize.DefaultHierLevels || K != int64(levels) {
		t.Errorf("levels %v, K %v: want K = L = %d", p["uniformized_levels"], p["uniformized_k"], uniformize.DefaultHierLevels)
	}
	if len(parts) > levels {
		t.Errorf("%d sub-instances for one decomposed node with %d levels", len(parts), levels)
	}
	var rows int64
	for _, q := range parts {
		if q.Epsilon != s.Privacy.Epsilon/2/float64(K) || q.Delta != s.Privacy.Delta/2/float64(K) {
			t.Errorf("sub-instance %v budget (%v, %v), want (ε/(2K), δ/(2K))", q.Config, q.Epsilon, q.Delta)
		}
		if len(q.Config) != 1 || q.DeltaTilde < 1 {
			t.Errorf("sub-instance %+v", q)
		}
		rows += q.Rows
	}
	if sum.Rows != rows {
		t.Errorf("rows written %d, sub-instances' rows add up to %d", sum.Rows, rows)
	}
	if tree, _ := p["uniformized_attribute_tree"].(string); tree == "" {
		t.Error("no attribute tree in the report")
	}
	t.Logf("tree:\n%s\nK = %d, partitions %+v", p["uniformized_attribute_tree"], K, parts)
	if again := run(); again.Rows != sum.Rows || again.NHat != sum.NHat {
		t.Errorf("same seed: rows %d vs %d, n̂ %v vs %v", again.Rows, sum.Rows, again.NHat, sum.NHat)
	}
}
