package pmw

import (
	"fmt"
	"math"

	"github.com/synth-dp/synth/dp"
)

// DefaultRounds is T when [Config.Rounds] is 0. Theory asks for
// T = Θ̃(ε·n) rounds (Hardt–Ligett–McSherry 2012; Qiu et al. Lemma 2.5),
// but every round costs budget: with ε₀ from advanced composition over 2T
// steps, the noise per measurement grows like √T while the multiplicative
// weights term n·√(log|X|/T) shrinks. Qiu et al. (§6, following the PMW
// implementation they compare against) observe that a constant T = 10
// works well in practice, and use it; so do we.
const DefaultRounds = 10

// DefaultWorkers is the number of goroutines that split the dense pass when
// [Config.Workers] is 0.
const DefaultWorkers = 2

// Config parameterises [Run]. The zero value is not usable: Epsilon, Delta
// and Sensitivity must be set.
type Config struct {
	// Epsilon and Delta are the total budget (ε, δ) of the run, ε > 0
	// finite and 0 < δ < 1 (the truncated Laplace mechanism for n̂ needs
	// δ > 0). Half goes to n̂, half to the T rounds.
	Epsilon, Delta float64
	// Sensitivity is Δ̃ ≥ 1: the public (or DP-estimated) bound on how many
	// tuples of the join a neighbouring instance adds or removes. Every
	// query answer q(J) changes by at most Δ̃ between neighbours.
	Sensitivity float64
	// Rounds is T; 0 means [DefaultRounds], or the automatic choice when
	// MaxRounds is set.
	Rounds int
	// MaxRounds, when > 0 and Rounds is 0, makes T automatic: chosen after
	// n̂ is drawn by [AutoRounds], at most MaxRounds. T is then a function
	// of the DP output n̂ and public parameters, so choosing it is
	// post-processing; the rounds still spend exactly (ε/2, δ/2).
	MaxRounds int
	// Reapply makes every round update with all measurements so far, in
	// order (MWEM-style; post-processing of DP outputs), instead of only
	// the newest one. Each re-application costs a pass over that query's
	// support.
	Reapply bool
	// Ledger, when not nil, is charged for the two halves of the budget
	// before any data is read, and receives n̂ as a published output.
	Ledger *dp.Ledger
	// Progress, when not nil, is called after every round with the round
	// number t and T. It sees public values only.
	Progress func(round, rounds int)
	// Workers is the number of goroutines of the dense pass; 0 means
	// [DefaultWorkers].
	Workers int

	// testExactN makes n̂ = |J| (no TLap noise). Unexported so that only
	// this package's tests can set it: no production path skips noise.
	testExactN bool
}

// Validate reports the first problem with c as an error wrapping
// [ErrInvalidConfig]: NaN, ±Inf, ε ≤ 0, δ outside (0, 1), Δ̃ < 1, negative
// rounds or workers.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case math.IsNaN(c.Epsilon) || math.IsInf(c.Epsilon, 0) || c.Epsilon <= 0:
		return bad("epsilon = %v, want a finite number > 0", c.Epsilon)
	case math.IsNaN(c.Delta) || c.Delta <= 0 || c.Delta >= 1:
		return bad("delta = %v, want 0 < delta < 1", c.Delta)
	case math.IsNaN(c.Sensitivity) || math.IsInf(c.Sensitivity, 0) || c.Sensitivity < 1:
		return bad("sensitivity = %v, want a finite number ≥ 1", c.Sensitivity)
	case c.Rounds < 0:
		return bad("rounds = %d, want ≥ 0 (0 means %d)", c.Rounds, DefaultRounds)
	case c.MaxRounds < 0:
		return bad("max rounds = %d, want ≥ 0", c.MaxRounds)
	case c.Workers < 0:
		return bad("workers = %d, want ≥ 0 (0 means %d)", c.Workers, DefaultWorkers)
	}
	return nil
}

func (c Config) autoRounds() bool { return c.Rounds == 0 && c.MaxRounds > 0 }

// AutoRounds returns the number of rounds T that balances the two error
// terms of PMW's utility bound (Ghazi et al. App. A, "by taking k = …"):
//
//	T = n̂·ε·√(ln|X|) / (Δ̃·ln|Q|·√(ln(1/δ)))
//
// with (ε, δ) the budget of the rounds, clamped to [DefaultRounds,
// maxRounds] (maxRounds ≥ DefaultRounds; a smaller value is raised). Large
// joins with small Δ̃ get many rounds; a heavy sensitivity bound gets
// DefaultRounds. n̂ must be a DP output.
func AutoRounds(nhat, eps, delta, sens float64, cells int64, queries int, maxRounds int) int {
	maxRounds = max(maxRounds, DefaultRounds)
	lnQ := math.Max(math.Log(float64(queries)), 1)
	lnX := math.Max(math.Log(float64(cells)), 1)
	t := math.Max(nhat, 0) * eps * math.Sqrt(lnX) / (sens * lnQ * math.Sqrt(math.Log(1/delta)))
	if !(t > DefaultRounds) {
		return DefaultRounds
	}
	if t > float64(maxRounds) {
		return maxRounds
	}
	return int(math.Ceil(t))
}

func (c Config) rounds() int {
	if c.Rounds == 0 {
		return DefaultRounds
	}
	return c.Rounds
}

func (c Config) workers() int {
	if c.Workers == 0 {
		return DefaultWorkers
	}
	return c.Workers
}
