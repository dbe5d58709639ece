// Package tpchgen writes TPC-H-shaped tables — region, nation, customer,
// orders and lineitem — as CSV or Parquet files at any scale factor,
// deterministic by seed, for synth's tests, examples and benchmarks.
//
// # Shape
//
// The row counts, keys and value distributions follow the TPC-H
// specification (revision 3.0, §4.2.3), not its exact byte stream (dbgen's
// own generator and text grammar are not reproduced):
//
//   - customer: 150,000·SF rows, c_custkey 1…N, c_nationkey uniform over
//     the 25 nations, c_mktsegment uniform over the five segments,
//     c_acctbal uniform in [−999.99, 9999.99];
//   - orders: 1,500,000·SF rows with TPC-H's sparse keys (the first 8 of
//     every 32), o_custkey never a multiple of 3 (a third of the customers
//     have no order, as in TPC-H), o_orderdate uniform in
//     [1992-01-01, 1998-08-02], o_orderpriority uniform, o_orderstatus F, O
//     or P from the line statuses, o_totalprice from the lines;
//   - lineitem: 1 to 7 lines per order (uniform, so about 4·orders rows),
//     l_quantity 1…50, l_discount 0.00…0.10, l_tax 0.00…0.08, ship, commit
//     and receipt dates offset from the order date, l_returnflag R or A
//     for lines received by 1995-06-17 and N after, l_linestatus F or O.
//
// Orders per customer are skewed as in TPC-H (zero for a third of the
// customers, binomial around ten for the others); [Config.Skew] > 0 draws
// o_custkey from a Zipf law instead, for heavier skew.
//
// Every value lies inside the domains declared by examples/tpch/*.yaml.
// Text columns (names, addresses, comments) are short synthetic strings
// without commas or quotes.
//
// # Determinism
//
// The same [Config] gives byte-identical files: every table is drawn from
// its own PCG stream seeded from [Config.Seed]. Files are written to
// temporary names in the target folder and renamed only when every table
// is complete, so a failed or cancelled run leaves no partial table.
//
// Not implemented: part, supplier and partsupp (l_partkey and l_suppkey
// are drawn in their TPC-H ranges, but those tables are not written), and
// Parquet output.
package tpchgen
