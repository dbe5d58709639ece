package joinasone

import (
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestNoiseMemo: the memoised Δ̃ samplers have a fresh sampler's
// parameters and draw the same values from the same seeded source.
func TestNoiseMemo(t *testing.T) {
	for _, b := range [][3]float64{{1, 5e-4, 0.1}, {0.25, 1e-6, 0.02}, {4, 0.1, 1}} {
		for range 2 { // the second call is served from the cache
			got, err := tdlap(b[0], b[1])
			if err != nil {
				t.Fatal(err)
			}
			want, err := dp.NewTruncatedDiscreteLaplace(b[0], b[1], 1)
			if err != nil {
				t.Fatal(err)
			}
			gotLog, err := logPad(b[0], b[1], b[2])
			if err != nil {
				t.Fatal(err)
			}
			wantLog, err := dp.NewLogPad(b[0], b[1], b[2])
			if err != nil {
				t.Fatal(err)
			}
			if got.Tau() != want.Tau() || got.Scale() != want.Scale() ||
				gotLog.Noise().Tau() != wantLog.Noise().Tau() || gotLog.Noise().Scale() != wantLog.Noise().Scale() ||
				gotLog.Noise().Sensitivity() != wantLog.Noise().Sensitivity() {
				t.Fatalf("%v: memo and fresh samplers differ", b)
			}
			s1, s2 := dp.NewSeededSource(7), dp.NewSeededSource(7)
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
	if _, err := tdlap(-1, 0.1); err == nil {
		t.Fatal("invalid ε accepted")
	}
}
