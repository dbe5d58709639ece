package relational

import (
	"context"
	"math"
)

// flow is the LP truncation with two units as a max flow. The constraint
// matrix of the LP is the incidence matrix of a bipartite graph (one
// column per join-result group, one row per unit id), which is totally
// unimodular, and the LP is exactly the max flow of the network
//
//	source → left id i (capacity τ) → right id i′ (capacity ψ_j for the
//	group j of (i, i′)) → sink (capacity τ):
//
// a flow is a feasible u (u_j on the middle edges; conservation gives the
// row sums ≤ τ) and conversely. Across the τ ladder only the source and
// sink capacities grow, so the current flow stays feasible and Dinic's
// algorithm continues from it instead of restarting.
//
// The graph is array based (edge e and its reverse e^1). Not safe for
// concurrent use.
type flow struct {
	n1, n2           int
	head, next, to   []int32
	res              []float64 // residual capacity
	level, iter      []int32
	queue            []int32
	tau, tol, value  float64
	srcEdge, sinkEdg []int32 // forward edges out of the source / into the sink
}

const (
	nodeSource = 0
	nodeSink   = 1
)

func newFlow(cs []Contribution, n1, n2 int) *flow {
	nodes := 2 + n1 + n2
	f := &flow{n1: n1, n2: n2, head: make([]int32, nodes), level: make([]int32, nodes), iter: make([]int32, nodes)}
	for i := range f.head {
		f.head[i] = -1
	}
	maxCap := 1.0
	for i := 0; i < n1; i++ {
		f.srcEdge = append(f.srcEdge, f.add(nodeSource, int32(2+i), 0))
	}
	for i := 0; i < n2; i++ {
		f.sinkEdg = append(f.sinkEdg, f.add(int32(2+n1+i), nodeSink, 0))
	}
	for _, c := range cs {
		f.add(int32(2+c.Units[0]), int32(2+n1+c.Units[1]), c.Psi)
		maxCap = math.Max(maxCap, c.Psi)
	}
	// Residuals at most tol count as saturated. With integer ψ (synth
	// answer measures ψ on an integer grid) and integer τ every residual
	// is an integer, exact in float64 below 2⁵³, and tol = ½ loses
	// nothing: the flow is the exact maximum. Otherwise tol is a relative
	// 10⁻¹² of the largest capacity, which keeps the float case from
	// chasing rounding dust.
	f.tol = 0.5
	for _, c := range cs {
		if c.Psi != math.Trunc(c.Psi) {
			f.tol = 1e-12 * maxCap
			break
		}
	}
	return f
}

func (f *flow) add(u, v int32, c float64) int32 {
	e := int32(len(f.to))
	f.to = append(f.to, v, u)
	f.res = append(f.res, c, 0)
	f.next = append(f.next, f.head[u], f.head[v])
	f.head[u], f.head[v] = e, e+1
	return e
}

// At raises the source and sink capacities to τ and augments.
func (f *flow) At(ctx context.Context, tau float64) (float64, error) {
	if tau > f.tau {
		d := tau - f.tau
		for _, e := range f.srcEdge {
			f.res[e] += d
		}
		for _, e := range f.sinkEdg {
			f.res[e] += d
		}
		f.tau = tau
	}
	for f.bfs() {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		copy(f.iter, f.head)
		for {
			pushed := f.dfs(nodeSource, math.Inf(1))
			if pushed <= f.tol {
				break
			}
			f.value += pushed
		}
	}
	return f.value, nil
}

func (f *flow) bfs() bool {
	for i := range f.level {
		f.level[i] = -1
	}
	f.level[nodeSource] = 0
	f.queue = append(f.queue[:0], nodeSource)
	for q := 0; q < len(f.queue); q++ {
		u := f.queue[q]
		for e := f.head[u]; e >= 0; e = f.next[e] {
			v := f.to[e]
			if f.res[e] > f.tol && f.level[v] < 0 {
				f.level[v] = f.level[u] + 1
				f.queue = append(f.queue, v)
			}
		}
	}
	return f.level[nodeSink] >= 0
}

func (f *flow) dfs(u int32, limit float64) float64 {
	if u == nodeSink {
		return limit
	}
	for ; f.iter[u] >= 0; f.iter[u] = f.next[f.iter[u]] {
		e := f.iter[u]
		v := f.to[e]
		if f.res[e] > f.tol && f.level[v] == f.level[u]+1 {
			d := f.dfs(v, math.Min(limit, f.res[e]))
			if d > f.tol {
				f.res[e] -= d
				f.res[e^1] += d
				return d
			}
		}
	}
	return 0
}
