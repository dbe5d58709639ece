// Package stattest holds the statistical checks shared by the tests of
// the samplers (dp, pmw, relational/multi): Pearson's chi-square
// goodness-of-fit test with small-expectation categories merged, so that
// its false-failure rate is the stated level and not inflated by one draw
// in a category that expects almost none; and [Seed], the seed of a
// randomized test, from the test binary's -seed flag or the clock.
//
// It is imported by tests only.
package stattest

import (
	"fmt"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// MinExpected is the smallest expected count of a category after merging
// (Cochran's rule).
const MinExpected = 5

// ChiSquareResult is the outcome of [ChiSquare].
type ChiSquareResult struct {
	Stat float64 // Pearson's statistic over the merged categories
	Crit float64 // the 1 − alpha quantile of χ² with DF degrees of freedom
	DF   int     // merged categories − 1
}

// Reject reports whether the statistic exceeds the critical value.
func (r ChiSquareResult) Reject() bool { return r.Stat > r.Crit }

// String formats the result for a test message.
func (r ChiSquareResult) String() string {
	return fmt.Sprintf("χ² = %.2f, critical %.2f (df %d)", r.Stat, r.Crit, r.DF)
}

// ChiSquare compares observed counts with category probabilities (which
// should sum to 1, an open-ended tail folded into an end category):
// adjacent categories are merged from the left until each expects at least
// [MinExpected] draws (a remainder at the right end joins the last merged
// category), and the statistic is compared with the 1 − alpha quantile of
// χ² with (merged categories − 1) degrees of freedom — an asymptotic level
// alpha test. It returns an error when fewer than two categories remain or
// the lengths differ.
func ChiSquare(observed []int64, probs []float64, alpha float64) (ChiSquareResult, error) {
	if len(observed) != len(probs) {
		return ChiSquareResult{}, fmt.Errorf("stattest: %d counts, %d probabilities", len(observed), len(probs))
	}
	var n int64
	for _, o := range observed {
		n += o
	}
	obs, exp := make([]float64, 0, len(observed)), make([]float64, 0, len(observed))
	var co, ce float64
	for i := range observed {
		co += float64(observed[i])
		ce += probs[i] * float64(n)
		if ce >= MinExpected {
			obs, exp = append(obs, co), append(exp, ce)
			co, ce = 0, 0
		}
	}
	if len(exp) > 0 {
		obs[len(obs)-1] += co
		exp[len(exp)-1] += ce
	}
	if len(exp) < 2 {
		return ChiSquareResult{}, fmt.Errorf("stattest: %d draws leave fewer than two categories expecting ≥ %d", n, MinExpected)
	}
	df := len(exp) - 1
	return ChiSquareResult{
		Stat: stat.ChiSquare(obs, exp),
		Crit: distuv.ChiSquared{K: float64(df)}.Quantile(1 - alpha),
		DF:   df,
	}, nil
}
