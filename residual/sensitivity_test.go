package residual_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/residual/internal/brute"
)

// path3 is R(A,B) ⋈ S(B,C) ⋈ T(C,D) with
//
//	R: (0,0) (1,0) (2,0)        deg_R(B=0) = 3
//	S: (0,0) (0,1) (1,1)        deg_S(B=0) = 2, deg_S(C=1) = 2
//	T: (1,0) (1,1) (1,2) (0,0)  deg_T(C=1) = 3
//
// T_R = 3, T_S = 1, T_T = 3, T_{R,S} = max_C = 3 (C=0: 3, C=1: 3),
// T_{S,T} = max_B (B=0: 1+3 = 4, B=1: 3) = 4, T_{R,T} = T_R·T_T = 9.
func path3() *brute.Instance {
	return &brute.Instance{Dom: 3, Rels: []brute.Relation{
		{Name: "R", Attrs: []string{"A", "B"}, Tuples: [][]int{{0, 0}, {1, 0}, {2, 0}}},
		{Name: "S", Attrs: []string{"B", "C"}, Tuples: [][]int{{0, 0}, {0, 1}, {1, 1}}},
		{Name: "T", Attrs: []string{"C", "D"}, Tuples: [][]int{{1, 0}, {1, 1}, {1, 2}, {0, 0}}},
	}}
}

func TestCompute(t *testing.T) {
	in := path3()
	h, err := in.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	const beta = 0.5
	got, err := residual.Compute(context.Background(), h, &brute.Counter{In: in}, beta)
	if err != nil {
		t.Fatal(err)
	}
	wantTE := map[string]float64{"R": 3, "S": 1, "T": 3, "R,S": 3, "S,T": 4, "R,T": 9}
	if fmt.Sprint(got.TE) != fmt.Sprint(wantTE) {
		t.Errorf("TE = %v, want %v", got.TE, wantTE)
	}
	// For i = R the polynomial of Def. 3.6 in (s_S, s_T) is T_{S,T} + s_S·T_T + s_T·T_S + s_S·s_T = 4 + 3a + b + ab;
	// for i = S it is T_{R,T} + s_R·T_T + s_T·T_R + s_R·s_T = 9 + 3a + 3b + ab;
	// for i = T it is T_{R,S} + s_R·T_S + s_S·T_R + s_R·s_S = 3 + a + 3b + ab.
	// i = S dominates: LŜ^k = 9 + 3k + ⌊k/2⌋·⌈k/2⌉.
	if got.LocalSensitivity != 9 {
		t.Errorf("LocalSensitivity = %v, want 9", got.LocalSensitivity)
	}
	want, wantK := 0.0, 0
	for k := range 60 {
		a, b := k/2, k-k/2
		l := 9 + 3*float64(k) + float64(a*b)
		if g := math.Exp(-beta*float64(k)) * l; g > want {
			want, wantK = g, k
		}
	}
	if math.Abs(got.RS-want) > 1e-12*want || got.ArgmaxK != wantK || got.Beta != beta {
		t.Errorf("RS = %v at k=%d (β %v), want %v at k=%d", got.RS, got.ArgmaxK, got.Beta, want, wantK)
	}
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"beta", "rs", "local_sensitivity", "k", "t_e"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON %s lacks %q", raw, k)
		}
	}
	if len(keys) != 5 {
		t.Errorf("JSON %s has %d keys, want 5", raw, len(keys))
	}
}

func TestComputeErrors(t *testing.T) {
	in := path3()
	h, err := in.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	for _, beta := range []float64{0, -0.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		c := &brute.Counter{In: in}
		if _, err := residual.Compute(context.Background(), h, c, beta); !errors.Is(err, residual.ErrInvalidParameter) {
			t.Errorf("Compute(β=%v): %v, want ErrInvalidParameter", beta, err)
		}
		if len(c.Calls) != 0 {
			t.Errorf("Compute(β=%v) queried the counter before rejecting β", beta)
		}
	}
	pub := in.Clone()
	for i := range pub.Rels {
		pub.Rels[i].Public = true
	}
	hp, err := pub.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	c := &brute.Counter{In: pub}
	if _, err := residual.Compute(context.Background(), hp, c, 1); !errors.Is(err, residual.ErrNoPrivate) || len(c.Calls) != 0 {
		t.Errorf("Compute with all public: %v after %d queries, want ErrNoPrivate before any", err, len(c.Calls))
	}
	if _, err := residual.Compute(context.Background(), h, failing{n: -3}, 1); !errors.Is(err, residual.ErrCounter) {
		t.Errorf("Compute with a negative count: %v, want ErrCounter", err)
	}
	if _, err := residual.Compute(context.Background(), nil, failing{}, 1); !errors.Is(err, residual.ErrInvalidParameter) {
		t.Errorf("Compute with nil hypergraph: %v, want ErrInvalidParameter", err)
	}
}

// table is a fixed T_E table: a map-backed BoundaryCounter.
type table map[hypergraph.Set]int64

func (tb table) MaxBoundaryCount(_ context.Context, _ *hypergraph.Hypergraph, e hypergraph.Set) (int64, error) {
	return tb[e], nil
}

func ExampleCompute() {
	// orders(o_orderkey, o_custkey) ⋈ lineitem(l_orderkey): a customer
	// with at most 3 orders, an order with at most 7 line items.
	h, err := hypergraph.New([]hypergraph.Relation{
		{Name: "orders", Attrs: map[string]string{"orderkey": "o_orderkey"}},
		{Name: "lineitem", Attrs: map[string]string{"orderkey": "l_orderkey"}},
	})
	if err != nil {
		panic(err)
	}
	counter := table{1: 1, 2: 7} // T_{orders} = 1 (key), T_{lineitem} = 7
	// LŜ^k = max(T_{lineitem} + k, T_{orders} + k) = 7 + k, and
	// e^{−βk}·(7 + k) peaks at k = 7 for β = 1/ln(10⁶) ≈ 1/13.8.
	s, err := residual.Compute(context.Background(), h, counter, 1/math.Log(1e6))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%v %v %.4f %d\n", s.TE, s.LocalSensitivity, s.RS, s.ArgmaxK)
	// Output: map[lineitem:7 orders:1] 7 8.4349 7
}
