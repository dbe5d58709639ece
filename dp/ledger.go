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
	// Parts are the spends of a sub-ledger reserved by [Ledger.Split].
	Parts []Spend `json:"parts,omitempty"`

	child *Ledger
}

// Output is a value released under DP (n̂, Δ̃, noisy counts).
type Output struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Ledger is a run's privacy budget as a state machine: spends are charged
// by sequential (basic) composition against the total and a spend that would
// exceed it is refused, so mechanisms charge before they touch data. A
// [Ledger.Split] reserves a share for a sub-mechanism, which then charges its
// own parts against that share. Safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	total   Budget
	spent   Budget
	spends  []*Spend
	outputs []Output
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

// Remaining returns the budget not yet charged.
func (l *Ledger) Remaining() Budget {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Budget{Epsilon: l.total.Epsilon - l.spent.Epsilon, Delta: l.total.Delta - l.spent.Delta}
}

// slack absorbs float rounding when shares add up to the total exactly.
const slack = 1e-12

func (l *Ledger) charge(s *Spend) error {
	if err := checkPositive("epsilon of "+s.Mechanism, s.Epsilon); err != nil {
		return err
	}
	if math.IsNaN(s.Delta) || s.Delta < 0 || s.Delta >= 1 {
		return fmt.Errorf("%w: delta of %s = %v", ErrInvalidParameter, s.Mechanism, s.Delta)
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

// Charge records a mechanism invocation costing b, composed with the
// ledger's other spends by the stated rule. It refuses (and records
// nothing) when b would exceed what remains.
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
		out[i].child = nil
		if s.child != nil {
			out[i].Parts = s.child.Spends()
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
	}
	return out
}
