package dp

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidParameter is wrapped by every error about a privacy or noise
// parameter (NaN, ±Inf, out of range).
var ErrInvalidParameter = errors.New("dp: invalid parameter")

// ErrUnsamplable is wrapped, with [ErrInvalidParameter], when a noise
// scale lies outside the range the exact discrete samplers draw from
// ([MinDiscreteScale], [MaxDiscreteScale]): the budget is too small (or
// the sensitivity too large) for the mechanism, not a fault of the data.
var ErrUnsamplable = errors.New("dp: noise scale outside the samplers' range")

// CheckScale reports whether the exact discrete samplers can draw at a
// scale (a discrete Laplace b or a discrete Gaussian σ): nil when it is a
// finite number in [[MinDiscreteScale], [MaxDiscreteScale]], else an error
// naming what, wrapping [ErrInvalidParameter] and, for a finite positive
// scale out of range, [ErrUnsamplable]. Callers use it on scales computed
// from public parameters to refuse a run before it reads data.
//
// A scale of +Inf (a sensitivity divided by an ε so small that the
// quotient overflows, e.g. ε = 5e-324) is out of range too: a
// [*ScaleError] like any other scale above [MaxDiscreteScale].
func CheckScale(what string, scale float64) error {
	if math.IsInf(scale, 1) {
		return &ScaleError{What: what, Scale: scale}
	}
	if err := checkPositive(what, scale); err != nil {
		return err
	}
	if scale < MinDiscreteScale || scale > MaxDiscreteScale {
		return &ScaleError{What: what, Scale: scale}
	}
	return nil
}

// ScaleError is a noise scale outside the samplers' range
// ([MinDiscreteScale], [MaxDiscreteScale]); it wraps [ErrInvalidParameter]
// and [ErrUnsamplable].
type ScaleError struct {
	// What names the scale, e.g. "discrete laplace scale".
	What string
	// Scale is its value (+Inf when it overflowed).
	Scale float64
}

// Error names the scale and the range.
func (e *ScaleError) Error() string {
	return fmt.Sprintf("%v: %v: %s = %v, want %v ≤ scale ≤ %v", ErrInvalidParameter, ErrUnsamplable, e.What, e.Scale, MinDiscreteScale, MaxDiscreteScale)
}

// Unwrap returns [ErrInvalidParameter] and [ErrUnsamplable].
func (e *ScaleError) Unwrap() []error { return []error{ErrInvalidParameter, ErrUnsamplable} }

// TooMuchNoise reports whether the scale is above the range: the budget
// is too small (rather than a scale below the range, a budget so large
// that the noise is finer than the samplers' resolution).
func (e *ScaleError) TooMuchNoise() bool { return !(e.Scale < MinDiscreteScale) }

// checkPositive rejects NaN, ±Inf and values ≤ 0.
func checkPositive(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("%w: %s = %v, want a finite number > 0", ErrInvalidParameter, name, v)
	}
	return nil
}

// checkDelta rejects δ outside (0, 1).
func checkDelta(name string, v float64) error {
	if math.IsNaN(v) || v <= 0 || v >= 1 {
		return fmt.Errorf("%w: %s = %v, want 0 < %s < 1", ErrInvalidParameter, name, v, name)
	}
	return nil
}

// checkMechanism validates the (ε, δ, Δ) of an approximate-DP noise
// mechanism: ε > 0 finite, 0 < δ < 1, Δ > 0 finite.
func checkMechanism(eps, delta, sens float64) error {
	if err := checkPositive("epsilon", eps); err != nil {
		return err
	}
	if err := checkDelta("delta", delta); err != nil {
		return err
	}
	return checkPositive("sensitivity", sens)
}
