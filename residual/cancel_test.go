package residual_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/residual/internal/brute"
)

// cancelAfter is the delay before the test contexts are cancelled;
// cancelWithin only guards against a hang. What the test checks is that
// the search returns context.Canceled: one that ignored its context would
// run far longer than the test, or finish with no error (a failure
// either way). It does not time how soon the search notices — a bound of
// a second or two fails on a loaded machine by chance — so cancelWithin is
// generous.
const (
	cancelAfter  = 50 * time.Millisecond
	cancelWithin = 2 * time.Minute
)

// star8 returns a star of 8 private relations R0..R7 sharing attribute hub.
func star8(t *testing.T) *hypergraph.Hypergraph {
	t.Helper()
	s := brute.Shape{Name: "star8"}
	for i := range 8 {
		s.Rels = append(s.Rels, fmt.Sprintf("R%d", i))
		s.Attrs = append(s.Attrs, []string{"hub", fmt.Sprint("x", i)})
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// randomCounter answers every boundary query with a fixed random count, so
// that T_E takes microseconds and a cancellation lands in the search.
type randomCounter struct{ v map[hypergraph.Set]int64 }

func (c *randomCounter) MaxBoundaryCount(ctx context.Context, h *hypergraph.Hypergraph, e hypergraph.Set) (int64, error) {
	return c.v[e], nil
}

// expensive runs f, which should take far longer than cancelAfter, under a
// context cancelled after cancelAfter, and checks that it returns an error
// wrapping context.Canceled (within cancelWithin, a guard against a hang).
func expensive(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f(ctx) }()
	time.AfterFunc(cancelAfter, cancel)
	select {
	case err := <-done:
		elapsed := time.Since(start)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: error %v after %v, want one wrapping context.Canceled", what, err, elapsed)
		}
		t.Logf("%s: %v after %v", what, err, elapsed)
	case <-time.After(cancelWithin):
		t.Fatalf("%s: still running %v after start, %v after cancellation", what, cancelWithin, cancelWithin-cancelAfter)
	}
}

// TestCancel checks that RSContext, LocalSensitivityAtContext and Compute
// stop soon after their context is cancelled, on a star of 8 private
// relations with random T_E and β = 10⁻³ (k up to 7004), an instance whose
// exact search would run far longer than the test.
func TestCancel(t *testing.T) {
	const beta = 1e-3
	rng := newRand(t)
	h := star8(t)
	te := randomTable(t, rng, h, 1e6)
	limit, err := residual.SearchLimit(h.Private().Len(), beta)
	if err != nil {
		t.Fatal(err)
	}
	expensive(t, "RSContext", func(ctx context.Context) error {
		_, _, err := residual.RSContext(ctx, te, h, beta)
		return err
	})
	expensive(t, "LocalSensitivityAtContext", func(ctx context.Context) error {
		_, err := residual.LocalSensitivityAtContext(ctx, te, h, limit-1)
		return err
	})
	counter := &randomCounter{v: map[hypergraph.Set]int64{}}
	for e := hypergraph.Set(1); e < h.All(); e++ {
		counter.v[e] = rng.Int64N(1_000_000)
	}
	expensive(t, "Compute", func(ctx context.Context) error {
		_, err := residual.Compute(ctx, h, counter, beta)
		return err
	})
}

// TestCancelledContext checks that a context already done on entry is
// reported, after the arguments, even for a search that would be instant,
// and that a deadline surfaces as context.DeadlineExceeded.
func TestCancelledContext(t *testing.T) {
	in := path3()
	h, err := in.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	te, err := residual.TE(t.Context(), h, &brute.Counter{In: in})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		if _, _, err := residual.RSContext(tc.ctx, te, h, 0.5); !errors.Is(err, tc.want) {
			t.Errorf("RSContext: %v, want %v", err, tc.want)
		}
		if _, err := residual.LocalSensitivityAtContext(tc.ctx, te, h, 3); !errors.Is(err, tc.want) {
			t.Errorf("LocalSensitivityAtContext: %v, want %v", err, tc.want)
		}
		if _, err := residual.Compute(tc.ctx, h, &brute.Counter{In: in}, 0.5); !errors.Is(err, tc.want) {
			t.Errorf("Compute: %v, want %v", err, tc.want)
		}
		// Arguments are checked first.
		if _, _, err := residual.RSContext(tc.ctx, te, h, -1); !errors.Is(err, residual.ErrInvalidParameter) {
			t.Errorf("RSContext(β = −1): %v, want ErrInvalidParameter", err)
		}
		if _, err := residual.LocalSensitivityAtContext(tc.ctx, te, h, -1); !errors.Is(err, residual.ErrInvalidParameter) {
			t.Errorf("LocalSensitivityAtContext(k = −1): %v, want ErrInvalidParameter", err)
		}
	}
	// A live context changes nothing.
	rs, k, err := residual.RS(te, h, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	rs2, k2, err := residual.RSContext(t.Context(), te, h, 0.5)
	if err != nil || rs2 != rs || k2 != k {
		t.Errorf("RSContext = %v, %d, %v; RS = %v, %d", rs2, k2, err, rs, k)
	}
}
