package dp

import (
	"errors"
	"math"
	"testing"
)

func TestCheckScale(t *testing.T) {
	for _, tc := range []struct {
		scale       float64
		ok, outside bool
	}{
		{MinDiscreteScale, true, false},
		{1, true, false},
		{MaxDiscreteScale, true, false},
		{math.Nextafter(MaxDiscreteScale, math.Inf(1)), false, true},
		{4.2e15, false, true},
		{math.Nextafter(MinDiscreteScale, 0), false, true},
		{0, false, false},
		{-1, false, false},
		{math.NaN(), false, false},
		{math.Inf(1), false, false},
	} {
		err := CheckScale("b", tc.scale)
		if (err == nil) != tc.ok || errors.Is(err, ErrUnsamplable) != tc.outside || (err != nil && !errors.Is(err, ErrInvalidParameter)) {
			t.Errorf("CheckScale(%v) = %v", tc.scale, err)
		}
		// The samplers refuse exactly what CheckScale refuses.
		_, lerr := NewDiscreteLaplace(tc.scale)
		_, gerr := NewDiscreteGaussian(tc.scale)
		if (lerr == nil) != tc.ok || (gerr == nil) != tc.ok || errors.Is(lerr, ErrUnsamplable) != tc.outside {
			t.Errorf("samplers at %v: %v, %v", tc.scale, lerr, gerr)
		}
	}
}
