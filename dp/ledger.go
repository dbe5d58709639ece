package dp

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// ErrBudgetExceeded is wrapped when a spend would take a ledger past its
// total.
var ErrBudgetExceeded = errors.New("dp: privacy budget exceeded")

// Budget is an (ε, δ) pair.
type Budget struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// Validate checks ε > 0 finite and 0 ≤ δ < 1.
func (b Budget) Validate() error {
	if err := checkPositive("epsilon", b.Epsilon); err != nil {
		return err
	}
	if math.IsNaN(b.Delta) || b.Delta < 0 || b.Delta >= 1 {
		return fmt.Errorf("%w: delta = %v, want 0 ≤ delta < 1", ErrInvalidParameter, b.Delta)
	}
	return nil
}

// Spend is one entry of a ledger: a mechanism invocation (or a share
// reserved for a sub-ledger) and the rule by which it composes.
type Spend struct {
	// Mechanism names what spent the budget, e.g. "tlap: noisy join size".
	Mechanism string `json:"mechanism"`
	// Budget is the (ε, δ) charged against the parent.
	Budget
	// Rule says how the charge was derived and how it composes, e.g.
	// "basic composition" or "advanced composition of 20 ε₀-DP steps".
	Rule string `json:"rule"`
	// Details holds public parameters of the spend (never data).
	Details map[string]any `json:"details,omitempty"`
	// Rho is the zCDP cost ρ of a spend charged in a zCDP ledger (see
	// [Ledger.SplitZCDP]); 0 elsewhere. A pure ε-DP spend there is recorded
	// with its Budget and ρ = ε²/2.
	Rho float64 `json:"rho,omitempty"`
	// Parts are the spends of a sub-ledger reserved by [Ledger.Split] or
	// [Ledger.SplitZCDP].
	Parts []Spend `json:"parts,omitempty"`
	// Instances are the spends of each of the disjoint sub-instances of a
	// share reserved once by [Ledger.SplitParallel], one list per instance.
	Instances [][]Spend `json:"instances,omitempty"`

	child    *Ledger
	children []*Ledger
}

// Output is a value released under DP (n̂, Δ̃, noisy counts).
type Output struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Ledger is a run's privacy budget as a state machine: spends are charged
// by sequential (basic) composition against the total and a spend that would
// exceed it is refused and leaves the ledger unchanged, so mechanisms charge
// before they touch data. A [Ledger.Split] reserves a share for a
// sub-mechanism, which then charges its own parts against that share;
// [Ledger.SplitParallel] reserves one share for n disjoint sub-instances
// (parallel composition) and [Ledger.SplitZCDP] one that is spent in zCDP ρ
// (additive composition, converted to (ε, δ) once). Safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	total   Budget
	spent   Budget
	spends  []*Spend
	outputs []Output

	// zCDP ledgers (rhoTotal > 0) account in ρ.
	rhoTotal, rhoSpent float64
}

// NewLedger returns an empty ledger with the given total budget.
func NewLedger(total Budget) (*Ledger, error) {
	if err := total.Validate(); err != nil {
		return nil, err
	}
	return &Ledger{total: total}, nil
}

// Total returns the ledger's total budget.
func (l *Ledger) Total() Budget { return l.total }

// Remaining returns the budget not yet charged. For a zCDP ledger (see
// [Ledger.SplitZCDP]) it is the largest pure ε-DP spend that still fits,
// (√(2ρ_left), 0); use [Ledger.RemainingRho] for the exact account.
func (l *Ledger) Remaining() Budget {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rhoTotal > 0 {
		return Budget{Epsilon: math.Sqrt(2 * math.Max(0, l.rhoTotal-l.rhoSpent))}
	}
	return Budget{Epsilon: l.total.Epsilon - l.spent.Epsilon, Delta: l.total.Delta - l.spent.Delta}
}

// IsZCDP reports whether the ledger accounts in zCDP ρ (it was made by
// [Ledger.SplitZCDP]).
func (l *Ledger) IsZCDP() bool { return l.rhoTotal > 0 }

// TotalRho returns the ρ budget of a zCDP ledger, 0 for other ledgers.
func (l *Ledger) TotalRho() float64 { return l.rhoTotal }

// RemainingRho returns the ρ not yet charged in a zCDP ledger, 0 for other
// ledgers.
func (l *Ledger) RemainingRho() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return math.Max(0, l.rhoTotal-l.rhoSpent)
}

// slack absorbs float rounding when shares add up to the total exactly.
const slack = 1e-12

func (l *Ledger) charge(s *Spend) error {
	if s.Rho != 0 || l.rhoTotal > 0 {
		return l.chargeRho(s)
	}
	if err := s.Budget.Validate(); err != nil {
		return fmt.Errorf("%s: %w", s.Mechanism, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, d := l.spent.Epsilon+s.Epsilon, l.spent.Delta+s.Delta
	if e > l.total.Epsilon*(1+slack) || d > l.total.Delta*(1+slack)+1e-300 {
		return fmt.Errorf("%w: %s asks (ε=%g, δ=%g) but (ε=%g, δ=%g) of (ε=%g, δ=%g) remain",
			ErrBudgetExceeded, s.Mechanism, s.Epsilon, s.Delta,
			l.total.Epsilon-l.spent.Epsilon, l.total.Delta-l.spent.Delta, l.total.Epsilon, l.total.Delta)
	}
	l.spent = Budget{Epsilon: e, Delta: d}
	l.spends = append(l.spends, s)
	return nil
}

// chargeRho charges a spend against a zCDP ledger. A spend given as a
// Budget must be pure (δ = 0) and costs ρ = ε²/2 (Bun–Steinke Prop. 1.4).
func (l *Ledger) chargeRho(s *Spend) error {
	if l.rhoTotal == 0 {
		return fmt.Errorf("%w: %s charges rho = %v to an (ε, δ) ledger; reserve a share with SplitZCDP",
			ErrInvalidParameter, s.Mechanism, s.Rho)
	}
	if s.Rho == 0 {
		if err := checkPositive("epsilon of "+s.Mechanism, s.Epsilon); err != nil {
			return err
		}
		if s.Delta != 0 {
			return fmt.Errorf("%w: %s charges delta = %v to a zCDP ledger, which accepts only rho or pure ε",
				ErrInvalidParameter, s.Mechanism, s.Delta)
		}
		s.Rho = s.Epsilon * s.Epsilon / 2
	}
	if err := checkPositive("rho of "+s.Mechanism, s.Rho); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rhoSpent + s.Rho
	if r > l.rhoTotal*(1+slack) {
		return fmt.Errorf("%w: %s asks rho = %g but rho = %g of %g remain",
			ErrBudgetExceeded, s.Mechanism, s.Rho, l.rhoTotal-l.rhoSpent, l.rhoTotal)
	}
	l.rhoSpent = r
	l.spends = append(l.spends, s)
	return nil
}

// Charge records a mechanism invocation costing b, composed with the
// ledger's other spends by the stated rule. It refuses (and records
// nothing) when b would exceed what remains. In a zCDP ledger b must have
// δ = 0 and is charged as ρ = ε²/2.
func (l *Ledger) Charge(mechanism string, b Budget, rule string, details map[string]any) error {
	return l.charge(&Spend{Mechanism: mechanism, Budget: b, Rule: rule, Details: details})
}

// Split reserves the share b for a sub-mechanism and returns a ledger whose
// total is b; the sub-mechanism charges its parts there.
func (l *Ledger) Split(mechanism string, b Budget, rule string, details map[string]any) (*Ledger, error) {
	child := &Ledger{total: b}
	if err := l.charge(&Spend{Mechanism: mechanism, Budget: b, Rule: rule, Details: details, child: child}); err != nil {
		return nil, err
	}
	return child, nil
}

// ChargeRho records a spend of ρ-zCDP in a zCDP ledger (one made by
// [Ledger.SplitZCDP]); zCDP spends add up (Bun–Steinke 2016, Lemma 2.3).
// It refuses (and records nothing) when ρ would exceed what remains or the
// ledger is not a zCDP ledger.
func (l *Ledger) ChargeRho(mechanism string, rho float64, rule string, details map[string]any) error {
	if err := checkPositive("rho of "+mechanism, rho); err != nil {
		return err
	}
	return l.charge(&Spend{Mechanism: mechanism, Rho: rho, Rule: rule, Details: details})
}

// SplitRho reserves rho in a zCDP ledger for a sub-mechanism that keeps
// its own accounts in (ε, δ) and is ρ-zCDP with ρ = [RhoForBudget](b) ≤
// rho: one that spends all of b through [Ledger.SplitZCDP] (as package
// pmw's mwem runs do). It returns the sub-mechanism's (ε, δ) ledger of
// total b, recorded under the spend. That the sub-mechanism spends b that
// way is the caller's claim; SplitRho checks RhoForBudget(b) ≤ rho.
func (l *Ledger) SplitRho(mechanism string, rho float64, b Budget, rule string, details map[string]any) (*Ledger, error) {
	if err := checkPositive("rho of "+mechanism, rho); err != nil {
		return nil, err
	}
	got, err := RhoForBudget(b)
	if err != nil {
		return nil, err
	}
	if got > rho*(1+slack) {
		return nil, fmt.Errorf("%w: %s: (ε=%g, δ=%g) is worth rho = %g, above its share %g", ErrInvalidParameter, mechanism, b.Epsilon, b.Delta, got, rho)
	}
	child := &Ledger{total: b}
	if err := l.charge(&Spend{Mechanism: mechanism, Rho: rho, Rule: rule, Details: details, child: child}); err != nil {
		return nil, err
	}
	return child, nil
}

// SplitZCDP reserves the (ε, δ) share b (δ > 0) and returns a zCDP ledger
// whose ρ budget is [RhoForBudget](b): its spends, charged with
// [Ledger.ChargeRho] (or [Ledger.Charge] for pure ε steps at ρ = ε²/2),
// add up in ρ, and the total converts back to (ε, δ)-DP by the
// Canonne–Kamath–Steinke conversion [RhoToEpsilon]. It is refused on a
// zCDP ledger.
func (l *Ledger) SplitZCDP(mechanism string, b Budget, rule string, details map[string]any) (*Ledger, error) {
	if l.rhoTotal > 0 {
		return nil, fmt.Errorf("%w: %s: SplitZCDP inside a zCDP ledger; charge rho directly", ErrInvalidParameter, mechanism)
	}
	rho, err := RhoForBudget(b)
	if err != nil {
		return nil, err
	}
	child := &Ledger{total: b, rhoTotal: rho}
	if err := l.charge(&Spend{Mechanism: mechanism, Budget: b, Rule: rule, Details: details, child: child}); err != nil {
		return nil, err
	}
	return child, nil
}

// SplitParallel reserves the share b once for n ≥ 1 sub-instances that
// partition the data, so that a neighbour changes only one of them
// (parallel composition, McSherry 2009; Ghazi et al. Lemma 4.1 and
// invariant 3 of DESIGN.md), and returns one ledger of total b per
// sub-instance. Whether the sub-instances are disjoint is the caller's
// claim; when a tuple may fall in up to k of them, divide b by k first
// ([GroupPrivacy]).
func (l *Ledger) SplitParallel(mechanism string, b Budget, n int, rule string, details map[string]any) ([]*Ledger, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %s: %d sub-instances, want ≥ 1", ErrInvalidParameter, mechanism, n)
	}
	children := make([]*Ledger, n)
	for i := range children {
		children[i] = &Ledger{total: b}
	}
	if err := l.charge(&Spend{Mechanism: mechanism, Budget: b, Rule: rule, Details: details, children: children}); err != nil {
		return nil, err
	}
	return children, nil
}

// SplitOverlap reserves the share b for n ≥ 1 sub-instances of which one
// tuple may lie in up to k ≥ 1 (a neighbour changes at most k of them), and
// returns one ledger of total (ε/k, δ/k) per sub-instance: basic
// composition over the k a tuple can change spends at most b. With k = 1
// it is [Ledger.SplitParallel]. Whether a tuple lies in at most k
// sub-instances is the caller's claim.
func (l *Ledger) SplitOverlap(mechanism string, b Budget, n int, k int64, rule string, details map[string]any) ([]*Ledger, error) {
	if k < 1 {
		return nil, fmt.Errorf("%w: %s: a tuple in at most %d sub-instances, want ≥ 1", ErrInvalidParameter, mechanism, k)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: %s: %d sub-instances, want ≥ 1", ErrInvalidParameter, mechanism, n)
	}
	each := Budget{Epsilon: b.Epsilon / float64(k), Delta: b.Delta / float64(k)}
	children := make([]*Ledger, n)
	for i := range children {
		children[i] = &Ledger{total: each}
	}
	if err := l.charge(&Spend{Mechanism: mechanism, Budget: b, Rule: rule, Details: details, children: children}); err != nil {
		return nil, err
	}
	return children, nil
}

// Publish records a value released under DP, for the privacy report. Only
// DP outputs and public parameters may be published.
func (l *Ledger) Publish(name string, value float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outputs = append(l.outputs, Output{Name: name, Value: value})
}

// Spends returns a snapshot of the spends, sub-ledgers expanded into Parts.
func (l *Ledger) Spends() []Spend {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Spend, len(l.spends))
	for i, s := range l.spends {
		out[i] = *s
		out[i].child, out[i].children = nil, nil
		if s.child != nil {
			out[i].Parts = s.child.Spends()
		}
		if s.children != nil {
			out[i].Instances = make([][]Spend, len(s.children))
			for j, c := range s.children {
				out[i].Instances[j] = c.Spends()
			}
		}
	}
	return out
}

// Outputs returns the published DP outputs of this ledger and its
// sub-ledgers, in order of publication within each.
func (l *Ledger) Outputs() []Output {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]Output(nil), l.outputs...)
	for _, s := range l.spends {
		if s.child != nil {
			out = append(out, s.child.Outputs()...)
		}
		for _, c := range s.children {
			out = append(out, c.Outputs()...)
		}
	}
	return out
}
