package uniformize

import (
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestTDLapMemo: the memoised degree noise has a fresh sampler's τ′ and
// scale and draws the same values from the same seeded source.
func TestTDLapMemo(t *testing.T) {
	for _, b := range [][2]float64{{1, 5e-4}, {0.25, 1e-6}, {4, 0.1}} {
		for range 2 { // the second call is served from the cache
			got, err := tdlap(b[0], b[1])
			if err != nil {
				t.Fatal(err)
			}
			want, err := dp.NewTruncatedDiscreteLaplace(b[0], b[1], 1)
			if err != nil {
				t.Fatal(err)
			}
			if got.Tau() != want.Tau() || got.Scale() != want.Scale() || got.Sensitivity() != want.Sensitivity() {
				t.Fatalf("%v: memo τ′ %d scale %v, fresh %d %v", b, got.Tau(), got.Scale(), want.Tau(), want.Scale())
			}
			s1, s2 := dp.NewSeededSource(7), dp.NewSeededSource(7)
			for range 100 {
				if x, y := got.Sample(s1), want.Sample(s2); x != y {
					t.Fatalf("%v: memo drew %d, fresh %d", b, x, y)
				}
			}
		}
	}
	if _, err := tdlap(-1, 0.1); err == nil {
		t.Fatal("invalid ε accepted")
	}
}
