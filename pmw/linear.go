package pmw

import (
	"fmt"
	"math"
)

// Term is one non-zero entry of an explicit linear query: the query's
// value in a cell.
type Term struct {
	Cell  int64
	Value float64
}

// LinearQuery is an explicit sparse linear query q(x) = Value on each
// listed cell and 0 elsewhere, Value ∈ [−1, 1].
type LinearQuery struct {
	// Name describes the query in reports; it must hold no data.
	Name  string
	Terms []Term
}

// LinearFamily is a list of explicit sparse linear queries. Answering it
// costs O(total terms) random reads; the update of a query touches its
// terms only.
type LinearFamily struct {
	qs []LinearQuery
}

var _ Family = (*LinearFamily)(nil)

// Linear returns the family of the given queries (copied). Bind (and so
// [Run]) checks that every cell is in the universe and appears at most once
// per query, and that every value is finite and in [−1, 1].
func Linear(qs []LinearQuery) *LinearFamily {
	f := &LinearFamily{qs: make([]LinearQuery, len(qs))}
	for i, q := range qs {
		f.qs[i] = LinearQuery{Name: q.Name, Terms: append([]Term(nil), q.Terms...)}
	}
	return f
}

func (*LinearFamily) family() {}

// Bind returns the family's queries over u.
func (lf *LinearFamily) Bind(u *Universe) (Queries, error) {
	for i, q := range lf.qs {
		seen := make(map[int64]bool, len(q.Terms))
		for _, t := range q.Terms {
			if t.Cell < 0 || t.Cell >= u.size {
				return nil, fmt.Errorf("%w: linear query %d (%q): cell %d outside [0, %d)", ErrInvalidInput, i, q.Name, t.Cell, u.size)
			}
			if seen[t.Cell] {
				return nil, fmt.Errorf("%w: linear query %d (%q): cell %d listed twice", ErrInvalidInput, i, q.Name, t.Cell)
			}
			seen[t.Cell] = true
			if math.IsNaN(t.Value) || t.Value < -1 || t.Value > 1 {
				return nil, fmt.Errorf("%w: linear query %d (%q): value %v at cell %d, want a value in [−1, 1]", ErrInvalidInput, i, q.Name, t.Value, t.Cell)
			}
		}
	}
	return &linearQ{u: u, qs: lf.qs}, nil
}

// linearQ is a LinearFamily bound to a universe.
type linearQ struct {
	u  *Universe
	qs []LinearQuery
}

// Name returns "linear".
func (f *linearQ) Name() string { return "linear" }

// Universe returns the family's universe.
func (f *linearQ) Universe() *Universe { return f.u }

// Len returns the number of queries.
func (f *linearQ) Len() int { return len(f.qs) }

// Describe returns "linear[name]" or "linear[#i]" for an unnamed query.
func (f *linearQ) Describe(i int) string {
	if f.qs[i].Name != "" {
		return "linear[" + f.qs[i].Name + "]"
	}
	return fmt.Sprintf("linear[#%d]", i)
}

// Answer writes every q_i(a) into out.
func (f *linearQ) Answer(a, out []float64) {
	if int64(len(a)) != f.u.size || len(out) != f.Len() {
		panic("pmw: Answer with wrong lengths")
	}
	f.direct(a, out)
}

// Each calls fn for every non-zero term of query i, in the order given.
func (f *linearQ) Each(i int, fn func(int64, float64)) {
	for _, t := range f.qs[i].Terms {
		if t.Value != 0 {
			fn(t.Cell, t.Value)
		}
	}
}

func (f *linearQ) proj() *projection           { return nil }
func (f *linearQ) finish(table, out []float64) { panic("pmw: linear has no table") }

func (f *linearQ) direct(a, out []float64) {
	for i := range f.qs {
		out[i] = f.sum(a, i)
	}
}

func (f *linearQ) directSparse(h map[int64]float64, out []float64) {
	for i, q := range f.qs {
		var s float64
		for _, t := range q.Terms {
			s += t.Value * h[t.Cell]
		}
		out[i] = s
	}
}

func (f *linearQ) sum(a []float64, i int) float64 {
	var s float64
	for _, t := range f.qs[i].Terms {
		s += t.Value * a[t.Cell]
	}
	return s
}

func (f *linearQ) update(w, s []float64, i int, eta, r float64) float64 {
	var dz float64
	for _, t := range f.qs[i].Terms {
		wo := w[t.Cell]
		wn := wo * math.Exp(eta*t.Value)
		w[t.Cell] = wn
		s[t.Cell] += (wo - wn) * r
		dz += wn - wo
	}
	return dz
}

func (f *linearQ) runs(i int, fn runFunc) {
	d := make([]int, len(f.u.sizes))
	for _, t := range f.qs[i].Terms {
		f.u.Decode(t.Cell, d)
		fn(t.Cell, 1, 1, d, len(d)-1)
	}
}
func (f *linearQ) supportSize(i int) int64 { return int64(len(f.qs[i].Terms)) }
