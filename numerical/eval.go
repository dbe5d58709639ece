package numerical

import (
	"slices"
)

// kind is the kind of a derived query: the counting query
// c_{w,τ}(t) = 1[w(t) > τ] or the linear query ℓ_{w,τ}(t) = min{w(t)/τ, 1}.
type kind uint8

const (
	countKind kind = iota
	linearKind
)

// table is one (sign, kind, τ) combination: per grid cell, the answer of
// the derived query restricted to that cell. Every derived query of a
// numerical query is a box sum of one table.
//
// Native units: a counting table holds element masses Σ 1[v > τ]·a(x, v);
// a linear table holds Σ min(v, τ)·a(x, v), that is τ·ℓ_{w,τ} — an integer
// on the true histogram (v and τ are integers in units of b).
type table struct {
	sign int
	kind kind
	tau  int64
}

// item is one derived query: numerical query q through table t.
type item struct {
	q, t int32
}

// evaluator answers every item on a dense vector over the universe in one
// pass over the vector plus one summed-area table per table.
type evaluator struct {
	u      *Universe
	layout satLayout
	qs     []*compiled
	tables []table
	// bySign[s] lists the tables of sign s by increasing τ.
	bySign [2][]int
	items  []item
	index  map[table]int32 // table → position in tables
	tab    [][]float64     // per table, per cell
	sat    [][]float64     // per table, padded summed-area table
}

func newEvaluator(u *Universe, qs []Query) (*evaluator, error) {
	ev := &evaluator{u: u, layout: newSATLayout(u.grid)}
	for _, q := range qs {
		c, err := compile(u.grid, ev.layout, q)
		if err != nil {
			return nil, err
		}
		ev.qs = append(ev.qs, c)
	}
	return ev, nil
}

// addTable returns the index of table k, adding it when new.
func (ev *evaluator) addTable(k table) int32 {
	if i, ok := ev.index[k]; ok {
		return i
	}
	if ev.index == nil {
		ev.index = map[table]int32{}
	}
	ev.index[k] = int32(len(ev.tables))
	ev.tables = append(ev.tables, k)
	ev.tab = append(ev.tab, make([]float64, ev.u.cells))
	ev.sat = append(ev.sat, make([]float64, ev.layout.len))
	s := k.sign
	ev.bySign[s] = append(ev.bySign[s], len(ev.tables)-1)
	slices.SortStableFunc(ev.bySign[s], func(a, b int) int {
		ta, tb := ev.tables[a], ev.tables[b]
		switch {
		case ta.tau < tb.tau:
			return -1
		case ta.tau > tb.tau:
			return 1
		}
		return int(ta.kind) - int(tb.kind)
	})
	return int32(len(ev.tables) - 1)
}

// addItem adds the derived query of q through table k.
func (ev *evaluator) addItem(q int, k table) int {
	t := ev.addTable(k)
	ev.items = append(ev.items, item{q: int32(q), t: t})
	return len(ev.items) - 1
}

// value is the native value of table t on an element of magnitude v.
func (t table) value(v int64) float64 {
	if t.kind == countKind {
		if v > t.tau {
			return 1
		}
		return 0
	}
	return float64(min(v, t.tau))
}

// norm converts native units to the query's [0, 1] scale: τ for a linear
// table, 1 for a counting one.
func (t table) norm() float64 {
	if t.kind == linearKind {
		return float64(t.tau)
	}
	return 1
}

// answer fills out (len items) with every item's native answer on the
// dense vector a (len |X|) times scale.
func (ev *evaluator) answer(a []float64, scale float64, out []float64) {
	u := ev.u
	nv := len(u.vals)
	for c := int64(0); c < u.cells; c++ {
		row := a[c*int64(nv) : (c+1)*int64(nv)]
		for s := range 2 {
			ts := ev.bySign[s]
			if len(ts) == 0 {
				continue
			}
			seg := row[u.off[s] : u.off[s]+u.n[s]]
			vals := u.vals[u.off[s] : u.off[s]+u.n[s]]
			var total float64
			for _, x := range seg {
				total += x
			}
			// Walk the values once: below holds the mass with v ≤ τ and
			// below1 its Σ v·mass.
			j := 0
			var below, below1 float64
			for _, ti := range ts {
				t := ev.tables[ti]
				for j < len(vals) && vals[j] <= t.tau {
					below += seg[j]
					below1 += seg[j] * float64(vals[j])
					j++
				}
				if t.kind == countKind {
					ev.tab[ti][c] = total - below
				} else {
					ev.tab[ti][c] = below1 + float64(t.tau)*(total-below)
				}
			}
		}
	}
	for ti := range ev.tables {
		ev.layout.build(ev.tab[ti], ev.sat[ti])
	}
	for i, it := range ev.items {
		out[i] = scale * ev.qs[it.q].sum(ev.sat[it.t])
	}
}

// support calls fn(element, native value) for every element where item i
// is non-zero.
func (ev *evaluator) support(i int, fn func(elem int64, v float64)) {
	it := ev.items[i]
	t := ev.tables[it.t]
	u := ev.u
	nv := int64(len(u.vals))
	off, n := u.off[t.sign], u.n[t.sign]
	ev.qs[it.q].eachCell(u.grid, func(cell int64) {
		base := cell*nv + int64(off)
		for j := range n {
			if v := t.value(u.vals[off+j]); v != 0 {
				fn(base+int64(j), v)
			}
		}
	})
}
