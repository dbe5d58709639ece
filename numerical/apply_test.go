package numerical

import (
	"math"
	"math/rand/v2"
	"testing"
)

// applyReference is the per-element multiplicative-weights update that
// core.apply replaced (one exp per element, through evaluator.support):
// the brute force TestApplyMatchesReference compares it with.
func (c *core) applyReference(m measurement) {
	t := c.ev.tables[c.ev.items[m.item].t]
	norm := t.norm()
	var cur float64
	c.ev.support(m.item, func(e int64, v float64) { cur += c.w[e] * v / norm })
	cur *= c.nhat / c.z
	target := math.Max(0, math.Min(c.nhat, m.value))
	eta := math.Log((target + 1) / (cur + 1))
	if eta == 0 {
		return
	}
	var dz float64
	c.ev.support(m.item, func(e int64, v float64) {
		old := c.w[e]
		c.w[e] = old * math.Exp(eta*v/norm)
		dz += c.w[e] - old
	})
	c.z += dz
	if ratio := c.z / float64(len(c.w)); !(ratio > 1e-100 && ratio < 1e100) {
		c.renormalise()
	}
}

// TestApplyMatchesReference runs random sequences of measurements (every
// item kind: counting and linear tables of both signs, on full and
// reduced universes, with repeated sweeps) through core.apply and through
// the per-element reference on copies of the same core, and requires the
// weights and their total to agree bit for bit after every update.
func TestApplyMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for trial := range 60 {
		lo, hi := 0.0, float64(1+r.IntN(40))
		if trial%2 == 1 {
			lo = -float64(1 + r.IntN(20))
		}
		in := newTiny(r, lo, hi, 40, 1+r.IntN(4))
		red := ReduceNever
		if trial%3 == 0 {
			red = ReduceAlways
		}
		u, err := NewUniverse(in.g, in.m, UniverseOptions{Reduction: red})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := newEvaluator(u, in.qs)
		if err != nil {
			t.Fatal(err)
		}
		for q := range in.qs {
			for _, s := range signs(u) {
				ev.addItem(q, table{sign: s, kind: countKind, tau: 0})
				for _, tau := range powers(u.bound[s]) {
					ev.addItem(q, table{sign: s, kind: countKind, tau: tau})
					ev.addItem(q, table{sign: s, kind: linearKind, tau: tau})
				}
				ev.addItem(q, table{sign: s, kind: linearKind, tau: u.bound[s]})
			}
		}
		a, _, err := newCore(ev, in.points(), 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a.w {
			a.w[i] = 0.5 + r.Float64()
		}
		a.start(float64(len(in.tuples)))
		b := &core{ev: ev, w: append([]float64(nil), a.w...), z: a.z, nhat: a.nhat}
		var meas []measurement
		for range 8 {
			meas = append(meas, measurement{item: r.IntN(len(ev.items)), value: r.Float64() * 1.2 * a.nhat})
			for range 3 {
				for _, m := range meas {
					a.apply(m)
					b.applyReference(m)
					if a.z != b.z {
						t.Fatalf("trial %d (%s): z = %v, reference %v", trial, u, a.z, b.z)
					}
					for i := range a.w {
						if a.w[i] != b.w[i] {
							t.Fatalf("trial %d (%s): w[%d] = %v, reference %v", trial, u, i, a.w[i], b.w[i])
						}
					}
				}
			}
		}
	}
}

// BenchmarkApply times one multiplicative update of a full-range linear
// item and of a counting item on the release's Adult measure universe
// (age bins × education, 128 cells × 4,356 values = 557,568 elements, the
// full universe), and the per-element reference it replaced; a run makes
// about 1,100 of them.
func BenchmarkApply(b *testing.B) {
	g := Grid{Sizes: []int{8, 16}}
	u, err := NewUniverse(g, Measure{Min: 0, Max: 4356}, UniverseOptions{Reduction: ReduceNever, MemoryCap: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	ev, err := newEvaluator(u, []Query{{Name: "total"}})
	if err != nil {
		b.Fatal(err)
	}
	lin := ev.addItem(0, table{kind: linearKind, tau: 4356})
	cnt := ev.addItem(0, table{kind: countKind, tau: 0})
	c, _, err := newCore(ev, nil, 1)
	if err != nil {
		b.Fatal(err)
	}
	for i := range c.w {
		c.w[i] = 1
	}
	c.start(1000)
	for _, bc := range []struct {
		name  string
		item  int
		apply func(measurement)
	}{{"linear", lin, c.apply}, {"counting", cnt, c.apply}, {"linear/reference", lin, c.applyReference}, {"counting/reference", cnt, c.applyReference}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				bc.apply(measurement{item: bc.item, value: float64(500 + i%2*1000)})
			}
		})
	}
}
