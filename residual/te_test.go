package residual_test

import (
	"context"
	"errors"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/residual/internal/brute"
)

// TestTEAgainstDirect checks TE, fed by the nested-loop counter, against an
// independent evaluation of Eq. (1) for every proper subset, on 300 random
// instances, and that TE asks the counter once for every connected non-empty
// proper subset and for nothing else.
func TestTEAgainstDirect(t *testing.T) {
	rng := newRand(t)
	for n := range 300 {
		shape := brute.Shapes[n%len(brute.Shapes)]
		in := brute.Random(rng, shape, 6, 0.2)
		h, err := in.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		c := &brute.Counter{In: in}
		te, err := residual.TE(context.Background(), h, c)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := te.At(0); got != 1 {
			t.Fatalf("T_∅ = %v, want 1", got)
		}
		for e := hypergraph.Set(1); e < h.All(); e++ {
			want := brute.DirectTE(in, e.Members())
			if got := te.At(e); got != float64(want) {
				t.Fatalf("%s: T_%v = %v, want %d", in, h.Names(e), got, want)
			}
			calls := c.Calls[e]
			if h.Connected(e) && calls != 1 || !h.Connected(e) && calls != 0 {
				t.Fatalf("T_%v: %d counter calls (connected: %v)", h.Names(e), calls, h.Connected(e))
			}
		}
		if calls := c.Calls[h.All()]; calls != 0 {
			t.Fatalf("counter asked for the full join %d times", calls)
		}
	}
}

// failing is a counter that returns a fixed answer.
type failing struct {
	n   int64
	err error
}

func (f failing) MaxBoundaryCount(context.Context, *hypergraph.Hypergraph, hypergraph.Set) (int64, error) {
	return f.n, f.err
}

func TestTEErrors(t *testing.T) {
	h, err := hypergraph.New([]hypergraph.Relation{
		{Name: "r", Attrs: map[string]string{"a": "a"}},
		{Name: "s", Attrs: map[string]string{"a": "a"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rels := make([]hypergraph.Relation, residual.MaxRelations+1)
	for i := range rels {
		rels[i] = hypergraph.Relation{Name: string(rune('a' + i)), Attrs: map[string]string{"x": "x"}}
	}
	big, err := hypergraph.New(rels)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	boom := errors.New("boom")
	tests := []struct {
		name    string
		ctx     context.Context
		h       *hypergraph.Hypergraph
		counter residual.BoundaryCounter
		want    error
	}{
		{"nil hypergraph", context.Background(), nil, failing{}, residual.ErrInvalidParameter},
		{"nil counter", context.Background(), h, nil, residual.ErrInvalidParameter},
		{"too many relations", context.Background(), big, failing{}, residual.ErrTooManyRelations},
		{"counter error", context.Background(), h, failing{err: boom}, boom},
		{"counter error category", context.Background(), h, failing{err: boom}, residual.ErrCounter},
		{"negative count", context.Background(), h, failing{n: -1}, residual.ErrCounter},
		{"cancelled", cancelled, h, failing{}, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := residual.TE(tc.ctx, tc.h, tc.counter)
			if !errors.Is(err, tc.want) {
				t.Fatalf("TE: %v, want %v", err, tc.want)
			}
		})
	}
	// The limit itself is accepted.
	ok, err := hypergraph.New(rels[:residual.MaxRelations])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := residual.NewTable(ok, map[hypergraph.Set]float64{}); errors.Is(err, residual.ErrTooManyRelations) {
		t.Fatalf("NewTable with %d relations: %v", residual.MaxRelations, err)
	}
}

func TestNewTable(t *testing.T) {
	// Path R(a,b) – S(b,c) – T(c,d): {R,T} is disconnected.
	h, err := hypergraph.New([]hypergraph.Relation{
		{Name: "R", Attrs: map[string]string{"a": "a", "b": "b"}},
		{Name: "S", Attrs: map[string]string{"b": "b", "c": "c"}},
		{Name: "T", Attrs: map[string]string{"c": "c", "d": "d"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	good := map[hypergraph.Set]float64{1: 2, 2: 3, 4: 5, 3: 7, 6: 11}
	te, err := residual.NewTable(h, good)
	if err != nil {
		t.Fatal(err)
	}
	if got := te.At(5); got != 10 {
		t.Errorf("T_{R,T} = %v, want T_R·T_T = 10", got)
	}
	if got := te.Named(h)["R,T"]; got != 10 {
		t.Errorf(`Named()["R,T"] = %v, want 10`, got)
	}
	if got := len(te.Named(h)); got != 6 {
		t.Errorf("Named has %d entries, want 6", got)
	}
	bad := []struct {
		name string
		edit func(map[hypergraph.Set]float64)
	}{
		{"missing", func(m map[hypergraph.Set]float64) { delete(m, 3) }},
		{"disconnected given", func(m map[hypergraph.Set]float64) { m[5] = 10 }},
		{"empty given", func(m map[hypergraph.Set]float64) { m[0] = 1 }},
		{"full given", func(m map[hypergraph.Set]float64) { m[7] = 1 }},
		{"outside", func(m map[hypergraph.Set]float64) { m[8] = 1 }},
		{"negative", func(m map[hypergraph.Set]float64) { m[1] = -1 }},
		{"NaN", func(m map[hypergraph.Set]float64) { m[1] = nan() }},
		{"Inf", func(m map[hypergraph.Set]float64) { m[1] = inf() }},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			m := map[hypergraph.Set]float64{}
			for k, v := range good {
				m[k] = v
			}
			tc.edit(m)
			if _, err := residual.NewTable(h, m); !errors.Is(err, residual.ErrInvalidParameter) {
				t.Fatalf("NewTable: %v, want ErrInvalidParameter", err)
			}
		})
	}
}
