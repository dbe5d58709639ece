package uniformize

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// hierRun partitions the stores instance with seed and then runs Hier with
// the same seed: the partition's bucket maps (by node and key) and the
// release's result.
func hierRun(t *testing.T, stores map[string][2]int, eps, delta float64, seed uint64) (string, *HierResult, *HierReleaseResult) {
	t.Helper()
	ctx := context.Background()
	h, eng := loadHierStores(t, stores)
	cfg := hierAuditConfig(t, eps, delta)
	cfg.Rounds = 1
	p, err := PrepareHier(h, cfg, mustLedger(t, eps, delta))
	if err != nil {
		t.Fatal(err)
	}
	data := HierEngine(eng, h)
	part, err := PartitionHierarchical(ctx, p.tree, data, p.params(), dp.NewSeededSource(seed))
	if err != nil {
		t.Fatal(err)
	}
	if err := data.Close(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(ctx, dp.NewSeededSource(seed), HierEngine(eng, h))
	if err != nil {
		t.Fatal(err)
	}
	return describe(part), part, res
}

// TestHierRunsDependOnDPOutputsOnly: the sub-instances that run are the
// partition's, one join-as-one run each in the partition's order — also
// a sub-instance without a join row — and on neighbouring instances (one
// purchase added, moving a store's degree by 1) whose noisy bucket maps
// coincide under the same seed, the same sub-instances run with the same
// budgets: the runs are a function of the partition's DP output, not of
// the true degrees.
func TestHierRunsDependOnDPOutputsOnly(t *testing.T) {
	t.Parallel()
	const eps, delta = 4.0, 1e-3
	rng := rand.New(rand.NewPCG(8, 9))
	same, emptyRan := 0, 0
	for it := range 8 {
		stores := map[string][2]int{}
		for k := range 3 {
			n := 1 + rng.IntN(40)
			if it%2 == 0 {
				n += 12 // every store above bucket 1: bucket 1 has no join row
			}
			stores[fmt.Sprintf("s%d", k)] = [2]int{n + 1, n} // one member without a purchase
		}
		nb := maps.Clone(stores)
		nb["s0"] = [2]int{stores["s0"][0], stores["s0"][0]} // that member's purchase
		seed := uint64(100 + it)
		dD, partD, resD := hierRun(t, stores, eps, delta, seed)
		dP, _, resP := hierRun(t, nb, eps, delta, seed)
		if len(resD.Partitions) != len(partD.Subs) {
			t.Fatalf("%d sub-instances, %d runs", len(partD.Subs), len(resD.Partitions))
		}
		// Memory: each run's dense weights are dropped once counted, and
		// the merged counts add up to the rows.
		var total int64
		if err := resD.Counts(nil, func(_, n int64) error { total += n; return nil }); err != nil {
			t.Fatal(err)
		}
		if total != resD.Rows {
			t.Fatalf("instance %d: %d rows emitted, Rows = %d", it, total, resD.Rows)
		}
		for _, r := range resD.Runs() {
			if r.PMW.Weights != nil {
				t.Fatalf("instance %d: sub-instance weights kept after the run", it)
			}
		}
		x := partD.tree.BottomUp()[0]
		for k, s := range partD.Subs {
			if got := resD.Partitions[k].Config[partD.tree.Node(x).Attrs[0]]; got != s.Config[x] {
				t.Fatalf("run %d has bucket %d, sub-instance %d", k, got, s.Config[x])
			}
			if s.Config[x] == 1 && it%2 == 0 {
				emptyRan++ // no store in bucket 1: its join is empty, and it ran
			}
		}
		if dD != dP {
			continue // the noisy buckets differ: nothing to compare
		}
		same++
		cfgs := func(r *HierReleaseResult) string {
			var out []string
			for _, p := range r.Partitions {
				out = append(out, fmt.Sprint(p.Config, p.Epsilon, p.Delta))
			}
			return fmt.Sprint(out)
		}
		if cfgs(resD) != cfgs(resP) {
			t.Fatalf("instance %d: same bucket maps, runs %s vs %s", it, cfgs(resD), cfgs(resP))
		}
	}
	if same < 3 || emptyRan < 3 {
		t.Fatalf("only %d neighbouring pairs with equal bucket maps, %d empty bucket-1 runs", same, emptyRan)
	}
	t.Logf("%d neighbouring pairs with equal noisy bucket maps ran the same sub-instances; %d empty sub-instances ran", same, emptyRan)
}
