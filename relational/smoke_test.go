package relational

import (
	"context"
	"testing"

	"github.com/synth-dp/synth/dp"
)

func TestSmoke(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	for _, text := range []string{
		`SELECT COUNT(*) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND c_mktsegment = 'BUILDING' AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'`,
		`SELECT l_shipmode, COUNT(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate GROUP BY l_shipmode`,
		`SELECT c_mktsegment, SUM(l_extendedprice * (1 - l_discount)) FROM customer c, orders o, lineitem l WHERE c.c_custkey = o.o_custkey AND l.l_orderkey = o.o_orderkey GROUP BY c_mktsegment`,
	} {
		q, err := Parse(ctx, e, s, text)
		if err != nil {
			t.Log(err)
			continue
		}
		for _, units := range [][]string{nil, {"customer"}} {
			l, _ := dp.NewLedger(dp.Budget{Epsilon: 1, Delta: 1e-6})
			res, err := Answer(ctx, e, dp.NewSeededSource(1), s, []*Query{q}, Options{Budget: dp.Budget{Epsilon: 1, Delta: 1e-6}, Units: units}, l)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				t.Logf("%v %d %s %v", r.Group, r.Value, r.Mechanism, *r.ErrorBound95)
			}
		}
	}
}
