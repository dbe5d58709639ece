package dp

import "testing"

// TestMemo: the memoised samplers have a fresh sampler's parameters and
// draw the same values from the same seeded source, on the first call and
// on the second (served from the cache); PerStepEpsilon's memo returns
// the uncached value; errors are returned, not cached.
func TestMemo(t *testing.T) {
	for _, b := range [][4]float64{{1, 5e-4, 0.1, 1}, {0.25, 1e-6, 0.02, 3}, {4, 0.1, 1, 1}} {
		for range 2 {
			got, err := CachedTruncatedDiscreteLaplace(b[0], b[1], int64(b[3]))
			if err != nil {
				t.Fatal(err)
			}
			want, err := NewTruncatedDiscreteLaplace(b[0], b[1], int64(b[3]))
			if err != nil {
				t.Fatal(err)
			}
			gotLog, err := CachedLogPad(b[0], b[1], b[2])
			if err != nil {
				t.Fatal(err)
			}
			wantLog, err := NewLogPad(b[0], b[1], b[2])
			if err != nil {
				t.Fatal(err)
			}
			if got.Tau() != want.Tau() || got.Scale() != want.Scale() || got.Sensitivity() != want.Sensitivity() ||
				gotLog.Noise().Tau() != wantLog.Noise().Tau() || gotLog.Noise().Scale() != wantLog.Noise().Scale() ||
				gotLog.Noise().Sensitivity() != wantLog.Noise().Sensitivity() {
				t.Fatalf("%v: memo and fresh samplers differ", b)
			}
			s1, s2 := NewSeededSource(7), NewSeededSource(7)
			for k := range 100 {
				if x, y := got.Sample(s1), want.Sample(s2); x != y {
					t.Fatalf("%v: memo drew %d, fresh %d", b, x, y)
				}
				x := 1 + float64(k)*3.7
				i, v := gotLog.Pad(s1, x)
				j, w := wantLog.Pad(s2, x)
				if i != j || v != w {
					t.Fatalf("%v: memo pad (%d, %v), fresh (%d, %v)", b, i, v, j, w)
				}
			}
		}
	}
	for _, c := range []struct {
		eps, delta float64
		k          int
	}{{1, 1e-6, 20}, {0.5, 0, 7}, {4, 1e-3, 400}} {
		want, err := perStepEpsilon(c.eps, c.delta, c.k)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if got, err := PerStepEpsilon(c.eps, c.delta, c.k); err != nil || got != want {
				t.Fatalf("PerStepEpsilon%v = %v, %v; uncached %v", c, got, err, want)
			}
		}
	}
	if _, err := PerStepEpsilon(1, 1e-6, 0); err == nil {
		t.Fatal("k = 0 accepted")
	}
	if _, err := CachedTruncatedDiscreteLaplace(-1, 0.1, 1); err == nil {
		t.Fatal("invalid ε accepted")
	}
	if _, err := CachedLogPad(-1, 0.1, 0.1); err == nil {
		t.Fatal("invalid ε accepted by the log pad")
	}
}
