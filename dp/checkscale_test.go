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
		// +Inf is a scale that overflowed (ε = 5e-324): outside the range,
		// so that the run exits 2 with the budget explained (issue 36).
		{math.Inf(1), false, true},
		{math.Inf(-1), false, false},
	} {
		err := CheckScale("b", tc.scale)
		if (err == nil) != tc.ok || errors.Is(err, ErrUnsamplable) != tc.outside || (err != nil && !errors.Is(err, ErrInvalidParameter)) {
			t.Errorf("CheckScale(%v) = %v", tc.scale, err)
		}
		var se *ScaleError
		if errors.As(err, &se) != tc.outside || (tc.outside && se.TooMuchNoise() != (tc.scale > 1)) {
			t.Errorf("CheckScale(%v) = %#v: ScaleError %v, want %v", tc.scale, err, errors.As(err, &se), tc.outside)
		}
		// The samplers refuse exactly what CheckScale refuses.
		_, lerr := NewDiscreteLaplace(tc.scale)
		_, gerr := NewDiscreteGaussian(tc.scale)
		if (lerr == nil) != tc.ok || (gerr == nil) != tc.ok || errors.Is(lerr, ErrUnsamplable) != tc.outside {
			t.Errorf("samplers at %v: %v, %v", tc.scale, lerr, gerr)
		}
	}
}
