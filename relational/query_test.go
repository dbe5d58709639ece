package relational

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	e, s := tpch(t)
	ctx := context.Background()
	ok := []struct {
		name, sql            string
		tables, joins, group int
		agg                  Agg
	}{
		{"count one table", "SELECT COUNT(*) FROM customer", 1, 0, 0, Count},
		{"count(*) spelled count()", "select count() from orders", 1, 0, 0, Count},
		{"Q3-like", "SELECT COUNT(*) FROM customer c, orders o, lineitem l WHERE c.c_custkey = o.o_custkey AND l.l_orderkey = o.o_orderkey AND c.c_mktsegment = 'BUILDING' AND o.o_orderdate < DATE '1995-03-15' AND l.l_shipdate > '1995-03-15'", 3, 2, 0, Count},
		{"JOIN ON and GROUP BY", "SELECT l_shipmode, COUNT(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate GROUP BY l_shipmode", 2, 1, 1, Count},
		{"SUM with arithmetic", "SELECT c_mktsegment, SUM(l_extendedprice * (1 - l_discount)) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey GROUP BY c_mktsegment", 3, 2, 1, Sum},
		{"BETWEEN, OR, NOT", "SELECT COUNT(*) FROM lineitem WHERE (l_discount BETWEEN 0.05 AND 0.07 OR NOT l_shipmode = 'AIR') AND l_extendedprice >= 100", 1, 0, 0, Count},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			q, err := Parse(ctx, e, s, c.sql)
			if err != nil {
				t.Fatal(err)
			}
			if len(q.Tables) != c.tables || len(q.Joins) != c.joins || len(q.GroupBy) != c.group || q.Agg != c.agg {
				t.Fatalf("got %d tables, %d joins, %d groups, agg %v", len(q.Tables), len(q.Joins), len(q.GroupBy), q.Agg)
			}
		})
	}
	bad := []struct {
		name, sql, want string
		err             error
	}{
		{"syntax", "SELEC COUNT(*) FROM orders", "syntax", ErrInvalid},
		{"two statements", "SELECT COUNT(*) FROM orders; SELECT 1", "2 statements", ErrUnsupported},
		{"limit", "SELECT COUNT(*) FROM orders LIMIT 1", "LIMIT", ErrUnsupported},
		{"having", "SELECT COUNT(*) FROM orders GROUP BY o_orderpriority HAVING COUNT(*) > 1", "HAVING", ErrUnsupported},
		{"avg", "SELECT AVG(l_discount) FROM lineitem", "aggregate AVG", ErrUnsupported},
		{"count distinct", "SELECT COUNT(DISTINCT o_custkey) FROM orders", "DISTINCT", ErrUnsupported},
		{"two aggregates", "SELECT COUNT(*), SUM(l_discount) FROM lineitem", "2 aggregates", ErrUnsupported},
		{"left join", "SELECT COUNT(*) FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey", "LEFT JOIN", ErrUnsupported},
		{"self-join", "SELECT COUNT(*) FROM orders a, orders b WHERE a.o_orderkey = b.o_orderkey", "self-join", ErrUnsupported},
		{"cross product", "SELECT COUNT(*) FROM orders, customer", "cross product", ErrUnsupported},
		{"subquery", "SELECT COUNT(*) FROM (SELECT * FROM orders)", "subquery", ErrUnsupported},
		{"like", "SELECT COUNT(*) FROM lineitem WHERE l_shipmode LIKE 'A%'", "LIKE in WHERE", ErrUnsupported},
		{"mixed-table predicate", "SELECT COUNT(*) FROM orders, lineitem WHERE o_orderkey = l_orderkey AND (l_shipmode = 'AIR' OR o_orderpriority = '1-URGENT')", "one table", ErrUnsupported},
		{"unknown table", "SELECT COUNT(*) FROM part", "not a table", ErrInvalid},
		{"unknown column", "SELECT COUNT(*) FROM orders WHERE o_comment = 'x'", "not a declared column", ErrInvalid},
		{"value outside domain", "SELECT COUNT(*) FROM lineitem WHERE l_shipmode = 'BOAT'", "declared domain", ErrInvalid},
		{"group by numeric", "SELECT COUNT(*) FROM lineitem GROUP BY l_discount", "GROUP BY", ErrInvalid},
		{"sum of category", "SELECT SUM(l_shipmode) FROM lineitem", "SUM over", ErrInvalid},
		{"division by column", "SELECT SUM(l_extendedprice / l_discount) FROM lineitem", "division", ErrUnsupported},
		{"window", "SELECT SUM(l_discount) OVER () FROM lineitem", "window", ErrUnsupported},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(ctx, e, s, c.sql)
			if err == nil {
				t.Fatal("no error")
			}
			var qe *QueryError
			if !errors.As(err, &qe) || qe.Query != c.sql {
				t.Fatalf("error %v is not a *QueryError naming the query", err)
			}
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q: want %v mentioning %q", err, c.err, c.want)
			}
		})
	}
}
