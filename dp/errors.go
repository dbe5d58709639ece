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
func CheckScale(what string, scale float64) error {
	if err := checkPositive(what, scale); err != nil {
		return err
	}
	if scale < MinDiscreteScale || scale > MaxDiscreteScale {
		return fmt.Errorf("%w: %w: %s = %v, want %v ≤ scale ≤ %v", ErrInvalidParameter, ErrUnsamplable, what, scale, MinDiscreteScale, MaxDiscreteScale)
	}
	return nil
}

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
