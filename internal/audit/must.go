package audit

import (
	"context"
	"testing"
)

// MustRunScalar is [RunScalar] as the mechanism audits of the repository's
// tests call it: n runs on each input, the claim's δ, confidence 1 − 10⁻⁶,
// and t failed on an error.
func MustRunScalar(t testing.TB, d, dPrime Mechanism[float64], n int, delta float64) Result {
	t.Helper()
	res, err := RunScalar(context.Background(), d, dPrime, Options{N: n, Delta: delta, Confidence: 1 - 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
