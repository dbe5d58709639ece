package pmw

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
)

func TestUniverseIndexing(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b", "c"}, []int{2, 3, 4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if u.Len() != 24 {
		t.Fatalf("Len = %d, want 24", u.Len())
	}
	// First column most significant: ((b0·3 + b1)·4 + b2).
	x, err := u.Index([]int{1, 2, 3})
	if err != nil || x != (1*3+2)*4+3 {
		t.Fatalf("Index(1,2,3) = %d, %v; want 23", x, err)
	}
	for x := range u.Len() {
		d := u.Decode(x, nil)
		if y, err := u.Index(d); err != nil || y != x {
			t.Fatalf("Index(Decode(%d)) = %d, %v", x, y, err)
		}
	}
	if _, err := u.Index([]int{0, 3, 0}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("Index out of range: %v, want ErrInvalidInput", err)
	}
	if i, ok := u.Column("b"); !ok || i != 1 {
		t.Fatalf("Column(b) = %d, %v", i, ok)
	}
}

func TestNewUniverseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		sizes []int
		cap   int64
		want  error
		words []string
	}{
		{"no columns", nil, nil, 0, ErrInvalidInput, nil},
		{"length mismatch", []string{"a"}, []int{1, 2}, 0, ErrInvalidInput, nil},
		{"zero size", []string{"a", "b"}, []int{3, 0}, 0, ErrInvalidInput, []string{`"b"`}},
		{"duplicate name", []string{"a", "a"}, []int{3, 3}, 0, ErrInvalidInput, []string{`"a"`}},
		{"above default cap", []string{"price", "qty", "zip"}, []int{1000, 1000, 1000}, 0, ErrTooLarge,
			[]string{"price(1000)", "qty(1000)", "zip(1000)", "coarser bins", "2.00 GiB"}},
		{"above given cap", []string{"x", "y"}, []int{100, 100}, 1000, ErrTooLarge, []string{"x(100)", "y(100)", "coarser bins"}},
		{"overflow", []string{"a", "b", "c"}, []int{1 << 30, 1 << 30, 1 << 30}, 0, ErrTooLarge, []string{"a(1073741824)", "more than 2^63"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewUniverse(tc.names, tc.sizes, tc.cap)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "pmw: ") {
				t.Errorf("error %q lacks the pmw: prefix", err)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			var tl *TooLargeError
			if errors.Is(err, ErrTooLarge) && !errors.As(err, &tl) {
				t.Errorf("ErrTooLarge not carried by a *TooLargeError")
			}
		})
	}
	// 1e8 cells fit the default cap: 1.6 GB of dense state.
	u, err := NewUniverse([]string{"a", "b", "c", "d", "e", "f", "g", "h"}, []int{10, 10, 10, 10, 10, 10, 10, 10}, 0)
	if err != nil {
		t.Fatalf("1e8 cells refused: %v", err)
	}
	if got := u.MemoryEstimate(); got != 1_600_000_000 {
		t.Fatalf("MemoryEstimate(1e8) = %d, want 1.6e9", got)
	}
}

// randomWorkload draws a universe of 1–4 columns of 1–12 bins and 1–5
// families (marginals, ranges, weighted sums, linear queries) over it.
func randomWorkload(t *testing.T, rnd *rand.Rand, memCap int64) (*Universe, []Family) {
	t.Helper()
	d := 1 + rnd.IntN(4)
	names, sizes := make([]string, d), make([]int, d)
	for c := range d {
		names[c], sizes[c] = fmt.Sprintf("c%d", c), 1+rnd.IntN(12)
	}
	u, err := NewUniverse(names, sizes, memCap)
	if err != nil {
		t.Fatal(err)
	}
	subset := func() []int {
		var out []int
		for _, c := range rnd.Perm(d) {
			if rnd.IntN(2) == 0 {
				out = append(out, c)
			}
		}
		return out
	}
	var fams []Family
	for range 1 + rnd.IntN(5) {
		switch rnd.IntN(4) {
		case 0:
			fams = append(fams, Marginal(subset()))
		case 1:
			by := subset()
			col := rnd.IntN(d)
			by = slices.DeleteFunc(by, func(c int) bool { return c == col })
			fams = append(fams, Range(col, by))
		case 2:
			cols, wcols := subset(), subset()
			n := 1
			for _, c := range wcols {
				n *= sizes[c]
			}
			w := make([]float64, n)
			for i := range w {
				w[i] = 2*rnd.Float64() - 1
			}
			fams = append(fams, Weighted(cols, wcols, w))
		case 3:
			fams = append(fams, Linear([]LinearQuery{{Name: "q", Terms: []Term{{Cell: rnd.Int64N(u.Len()), Value: 1}}}}))
		}
	}
	return u, fams
}

// TestPlanMemoryMatchesRun: on 300 random workloads and both variants,
// Run's refusal is CheckMemory's — one count, made before the histogram
// is read: with the cap at the planned need Run gets past the check (and
// fails on the histogram's bad cell, the first thing it reads), one byte
// below it refuses with the plan's parts. Before Run called CheckMemory,
// the run kept a count of its own that left out the histogram (and, for
// mwem, the families' arrays): under the cap without those parts, this
// test's last check fails on the old code.
func TestPlanMemoryMatchesRun(t *testing.T) {
	rnd := rand.New(rand.NewPCG(16, 1))
	bad := []Cell{{Index: -1, Count: 1}}
	for i := range 300 {
		for _, variant := range []Variant{VariantPaper, VariantMWEM} {
			workers := rnd.IntN(4)
			cfg := Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Variant: variant, Workers: workers, Rounds: 2}
			probe, fams := randomWorkload(t, rnd, 1<<40)
			plan, err := PlanMemory(probe, fams, cfg)
			if err != nil {
				t.Fatalf("instance %d: %v", i, err)
			}
			if plan.Histogram < 32*probe.Len() {
				t.Fatalf("instance %d: histogram %d B, want at least 32 B a cell", i, plan.Histogram)
			}
			u, _ := NewUniverse(probe.names, probe.sizes, plan.Total())
			if _, err := Run(context.Background(), dp.NewSeededSource(1), u, fams, bad, cfg); !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("instance %d (%s): Run at the planned need: %v, want the histogram's error", i, variant, err)
			}
			for _, c := range []int64{plan.Total() - 1, plan.Total() - plan.Histogram} {
				u, _ = NewUniverse(probe.names, probe.sizes, c)
				if u == nil {
					continue // below the dense state: refused by NewUniverse itself
				}
				_, err = Run(context.Background(), dp.NewSeededSource(1), u, fams, bad, cfg)
				var tl *TooLargeError
				if !errors.As(err, &tl) || tl.Parts == nil || *tl.Parts != plan {
					t.Fatalf("instance %d (%s): Run under a cap of %d (need %d): %v, want the plan's refusal", i, variant, c, plan.Total(), err)
				}
			}
		}
	}
}

// TestCheckMemoryParts: the histogram (32 B a cell, 48 more with an
// explicit linear family in the paper variant) and the merged counts
// (8 B a cell with MergeCounts) are in the count.
func TestCheckMemoryParts(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b"}, []int{10, 20}, 0)
	if err != nil {
		t.Fatal(err)
	}
	lin := Linear([]LinearQuery{{Name: "q", Terms: []Term{{Cell: 3, Value: 1}}}})
	for _, c := range []struct {
		fams            []Family
		cfg             Config
		histogram, merg int64
	}{
		{[]Family{Marginal([]int{0})}, Config{Variant: VariantPaper}, 32 * 200, 0},
		{[]Family{Marginal([]int{0}), lin}, Config{Variant: VariantPaper}, 80 * 200, 0},
		{[]Family{Marginal([]int{0}), lin}, Config{Variant: VariantMWEM}, 32 * 200, 0},
		{[]Family{Marginal([]int{0})}, Config{Variant: VariantMWEM, MergeCounts: true}, 32 * 200, 8 * 200},
	} {
		m, err := PlanMemory(u, c.fams, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if m.Histogram != c.histogram || m.Merged != c.merg {
			t.Errorf("%s: histogram %d, merged %d; want %d, %d", c.cfg.Variant, m.Histogram, m.Merged, c.histogram, c.merg)
		}
		if m.Total() != m.Cells+m.Tables+m.Queries+m.Families+m.Offsets+m.Histogram+m.Merged {
			t.Errorf("total %d is not the sum of %+v", m.Total(), m)
		}
	}
}

// allocFixture is the universe, workload (a marginal, a range, a weighted
// family, a 3-way marginal) and dense histogram of the allocation tests.
func allocFixture(t *testing.T) (*Universe, []Family, []Cell) {
	t.Helper()
	u, err := NewUniverse([]string{"a", "b", "c", "d"}, []int{9, 7, 5, 12}, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, 5*12)
	for i := range w {
		w[i] = float64(i%7)/7 - 0.5
	}
	fams := []Family{Marginal([]int{0, 1}), Range(3, []int{2}), Weighted([]int{0}, []int{2, 3}, w), Marginal([]int{1, 2, 3})}
	hist := make([]Cell, 0, u.Len())
	for x := range u.Len() {
		hist = append(hist, Cell{Index: x, Count: x % 5})
	}
	return u, fams, hist
}

// TestPlanMemoryAllocations compares the up-front count with the arrays a
// whole mwem run really allocates, read from its state: the offsets, the
// families' bound arrays and the tables exactly (up to the measurement
// tables of marginals the run never selected), the dense state as an
// upper bound.
func TestPlanMemoryAllocations(t *testing.T) {
	u, fams, hist := allocFixture(t)
	cfg := Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Workers: 3, Rounds: 12}
	plan, err := PlanMemory(u, fams, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMWEM(dp.NewSeededSource(3), u, fams, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.init(hist); err != nil {
		t.Fatal(err)
	}
	for !m.done {
		m.round(mwemRoundSweeps)
	}
	m.fit(mwemFinalSweeps)
	dense := 8 * int64(len(m.w))
	tables := 8 * int64(len(m.truth)+len(m.lr)+len(m.fac))
	for _, s := range m.scratch {
		tables += 8 * int64(len(s))
	}
	for _, me := range m.meas {
		tables += 8 * int64(len(me.sum)+len(me.ybar)+len(me.target))
	}
	var offsets int64
	for _, off := range m.plan.innerOff {
		offsets += 4 * int64(len(off))
	}
	if m.iu != m.u {
		dense += 8 * u.Len() // result's copy in the universe's order
	}
	res := m.result()
	if int64(len(res.Weights)) != u.Len() {
		t.Fatalf("result over %d cells", len(res.Weights))
	}
	var fam int64
	for _, f := range fams {
		q, err := f.Bind(u)
		if err != nil {
			t.Fatal(err)
		}
		switch q := q.(type) {
		case *rangeQ:
			fam += 8 * int64(len(q.lo)+len(q.hi))
		case *weightedQ:
			fam += 4 * int64(len(q.jOf)+len(q.lOf))
		}
	}
	if offsets != plan.Offsets || fam != plan.Families {
		t.Errorf("offsets %d, family arrays %d allocated; planned %d, %d", offsets, fam, plan.Offsets, plan.Families)
	}
	if dense > plan.Cells || dense < plan.Cells/2 {
		t.Errorf("dense state %d allocated, planned %d", dense, plan.Cells)
	}
	// The plan counts three measurement tables for every table; the run
	// allocates them for the measured ones only.
	unmeasured := int64(0)
	for p, pr := range m.plan.projs {
		if m.measOf[p] == nil {
			unmeasured += 3 * 8 * int64(pr.size)
		}
	}
	if tables+unmeasured != plan.Tables {
		t.Errorf("tables %d allocated + %d for the %d unmeasured tables, planned %d", tables, unmeasured, len(m.plan.projs)-len(m.meas), plan.Tables)
	}
}

// TestTooLargeErrorShowsExactBytes: a need one byte per cell above the cap
// must not read as equal to it.
func TestTooLargeErrorShowsExactBytes(t *testing.T) {
	mem := Memory{Cells: 2 << 30, Tables: 16}
	e := &TooLargeError{Columns: []string{"a"}, Sizes: []int{1 << 27}, Cells: 1 << 27, Bytes: mem.Total(), Cap: 2 << 30, Parts: &mem}
	msg := e.Error()
	for _, w := range []string{"need 2147483664 B (2.00 GiB", "memory cap of 2147483648 B (2.00 GiB)", "dense cells 2147483648 B + marginal tables 16 B"} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q does not contain %q", msg, w)
		}
	}
}

// TestPlanMemoryAllocationsPaper is TestPlanMemoryAllocations for the
// paper variant: after a run, the arrays the engine allocated — the dense
// weights and running sum, the workers' tables and the true tables init
// builds, the weighted families' per-table-cell indices, the true and
// synthetic answers and scores, the range families' (lo, hi) pairs and the
// pass offsets — are compared with PlanMemory's parts (the histogram,
// the caller's, is not allocated here). A plan without the true tables or
// the workers' copies fails it.
func TestPlanMemoryAllocationsPaper(t *testing.T) {
	u, fams, hist := allocFixture(t)
	cfg := Config{Variant: VariantPaper, Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Workers: 3, Rounds: 12}
	plan, err := PlanMemory(u, fams, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(dp.NewSeededSource(3), u, fams, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.init(hist); err != nil {
		t.Fatal(err)
	}
	for range e.rounds {
		e.round()
	}
	dense := 8 * int64(len(e.w)+len(e.s))
	tables := 8 * int64(e.plan.tableLen) // init's true tables
	for _, s := range e.scratch {
		tables += 8 * int64(len(s))
	}
	queries := 8 * int64(len(e.truth)+len(e.ans)+len(e.scores))
	var weightedIdx, pairs int64
	for _, f := range e.fams {
		switch q := f.(type) {
		case *weightedQ:
			weightedIdx += 4 * int64(len(q.jOf)+len(q.lOf))
		case *rangeQ:
			pairs += 8 * int64(len(q.lo)+len(q.hi))
		}
	}
	var offsets int64
	for _, off := range e.plan.innerOff {
		offsets += 4 * int64(len(off))
	}
	if dense != plan.Cells {
		t.Errorf("dense state %d B allocated, planned %d", dense, plan.Cells)
	}
	if tables+weightedIdx > plan.Tables || tables+weightedIdx < plan.Tables/2 {
		t.Errorf("tables %d B + weighted indices %d B allocated, planned %d", tables, weightedIdx, plan.Tables)
	}
	if queries+pairs > plan.Queries {
		t.Errorf("answers and scores %d B + range pairs %d B allocated, planned %d", queries, pairs, plan.Queries)
	}
	if offsets != plan.Offsets {
		t.Errorf("offsets %d B allocated, planned %d", offsets, plan.Offsets)
	}
	t.Logf("allocated: dense %d, tables %d + %d, queries %d + %d, offsets %d; planned %+v", dense, tables, weightedIdx, queries, pairs, offsets, plan)
}
