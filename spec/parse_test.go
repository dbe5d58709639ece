package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// baseSpec is a valid two-table spec; the bad cases below replace one of its
// lines. Line numbers matter: keep them in sync with the cases.
var baseLines = []string{
	/* 1 */ `privacy: {epsilon: 1.0, delta: 1e-6}`,
	/* 2 */ `tables:`,
	/* 3 */ `  - name: customer`,
	/* 4 */ `    source: customer.csv`,
	/* 5 */ `    primary_key: c_custkey`,
	/* 6 */ `    columns:`,
	/* 7 */ `      c_custkey: {type: key}`,
	/* 8 */ `      c_mktsegment: {type: categorical, values: [AUTOMOBILE, BUILDING]}`,
	/* 9 */ `  - name: orders`,
	/* 10 */ `    source: orders.parquet`,
	/* 11 */ `    columns:`,
	/* 12 */ `      o_custkey: {type: key}`,
	/* 13 */ `      o_totalprice: {type: numeric, min: 0, max: 600000, bins: 32}`,
	/* 14 */ `      o_orderdate: {type: date, min: 1992-01-01, max: 1998-12-31, granularity: year}`,
	/* 15 */ `      o_shippriority: {type: integer, min: 0, max: 9}`,
	/* 16 */ `      o_urgent: {type: boolean}`,
	/* 17 */ `join: ["orders.o_custkey = customer.c_custkey"]`,
	/* 18 */ `release:`,
	/* 19 */ `  columns: [c_mktsegment, o_totalprice, o_orderdate, o_shippriority, o_urgent]`,
	/* 20 */ `workload:`,
	/* 21 */ `  marginals: [[c_mktsegment, o_orderdate]]`,
	/* 22 */ `  ranges: [{column: o_totalprice, by: [c_mktsegment]}]`,
	/* 23 */ `  numeric: [{sum: o_totalprice, where: {o_shippriority: [0, 3], o_urgent: [true]}}]`,
	/* 24 */ `output: {path: out}`,
}

// withLine returns the base spec with line n (1-based) replaced by text
// (which may hold several lines, or none).
func withLine(n int, text string) string { return withLines(map[int]string{n: text}) }

// withLines replaces several lines of the base spec at once.
func withLines(repl map[int]string) string {
	lines := append([]string(nil), baseLines...)
	for n, text := range repl {
		lines[n-1] = text
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestParseBase(t *testing.T) {
	s, err := Parse([]byte(withLine(1, baseLines[0])), "base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Tables); got != 2 {
		t.Fatalf("tables: got %d, want 2", got)
	}
	if s.Tables[1].Format != "parquet" || s.Tables[0].Format != "csv" {
		t.Errorf("formats: got %q, %q", s.Tables[0].Format, s.Tables[1].Format)
	}
	q := s.Workload.Numeric[0]
	want := []Condition{
		{Column: ColumnRef{"orders", "o_shippriority"}, Lo: 0, Hi: 3},
		{Column: ColumnRef{"orders", "o_urgent"}, Values: []string{"true"}},
	}
	if !reflect.DeepEqual(q.Where, want) {
		t.Errorf("where: got %+v, want %+v", q.Where, want)
	}
	if got := s.Column(ColumnRef{"orders", "o_urgent"}).OutOfDomain; got != OutOfDomainError {
		t.Errorf("default out_of_domain: got %q", got)
	}
	if got := s.Column(ColumnRef{"orders", "o_custkey"}).OutOfDomain; got != "" {
		t.Errorf("key out_of_domain: got %q, want empty", got)
	}
	if s.Release.Method != Auto {
		t.Errorf("default method: got %q", s.Release.Method)
	}
}

// anyLine in a bad case accepts any line > 0: YAML syntax errors carry the
// line yaml.v3 reports, which for parser errors is the start of the
// enclosing construct rather than the offending token.
const anyLine = -1

type badCase struct {
	name string
	spec string // the whole spec
	key  string // Error.Key
	line int    // Error.Line; 0 = no line
	msg  string // a substring of the message
}

func badCases() []badCase {
	return []badCase{
		// Unknown and duplicate keys.
		{"unknown column key", withLine(13, `      o_totalprice: {type: numeric, min: 0, max: 600000, bin: 32}`), "tables[1].columns.o_totalprice", 13, `unknown key "bin"`},
		{"unknown top-level key", withLine(24, `outptu: {path: out}`), "", 24, `unknown key "outptu"`},
		{"unknown table key", withLine(10, "    sourc: orders.csv\n    source: orders.csv"), "tables[1]", 10, `unknown key "sourc"`},
		{"unknown privacy key", withLine(1, `privacy: {epsilon: 1, delta: 0, eps: 2}`), "privacy", 1, `unknown key "eps"`},
		{"unknown workload key", withLine(21, `  marginal: [[c_mktsegment]]`), "workload", 21, `unknown key "marginal"`},
		{"duplicate column", withLine(16, `      o_totalprice: {type: boolean}`), "tables[1].columns.o_totalprice", 16, "duplicate key (first at line 13)"},
		{"key not for type", withLine(13, `      o_totalprice: {type: numeric, min: 0, max: 1, bins: 2, values: [a]}`), "tables[1].columns.o_totalprice.values", 13, "not allowed for a numeric column"},
		{"out_of_domain on key", withLine(12, `      o_custkey: {type: key, out_of_domain: drop}`), "tables[1].columns.o_custkey.out_of_domain", 12, "not allowed for a key column"},
		// Privacy.
		{"unit not a table", withLine(1, `privacy: {epsilon: 1, delta: 1e-6, unit: client}`), "privacy.unit", 1, `"client" is not a table of the spec`},
		{"unit empty", withLine(1, `privacy: {epsilon: 1, delta: 1e-6, unit: ""}`), "privacy.unit", 1, "must not be empty"},
		{"epsilon NaN", withLine(1, `privacy: {epsilon: .nan, delta: 1e-6}`), "privacy.epsilon", 1, "must be finite, got .nan"},
		{"epsilon Inf", withLine(1, `privacy: {epsilon: .inf, delta: 1e-6}`), "privacy.epsilon", 1, "must be finite, got .inf"},
		{"epsilon zero", withLine(1, `privacy: {epsilon: 0, delta: 1e-6}`), "privacy.epsilon", 1, "must be > 0, got 0"},
		{"epsilon negative", withLine(1, `privacy: {epsilon: -1, delta: 1e-6}`), "privacy.epsilon", 1, "must be > 0, got -1"},
		{"epsilon string", withLine(1, `privacy: {epsilon: "1.0", delta: 1e-6}`), "privacy.epsilon", 1, `must be a number, got "1.0"`},
		{"delta one", withLine(1, `privacy: {epsilon: 1, delta: 1}`), "privacy.delta", 1, "must be in [0, 1), got 1"},
		{"delta negative", withLine(1, `privacy: {epsilon: 1, delta: -1e-9}`), "privacy.delta", 1, "must be in [0, 1)"},
		{"delta -Inf", withLine(1, `privacy: {epsilon: 1, delta: -.inf}`), "privacy.delta", 1, "must be finite"},
		{"missing delta", withLine(1, `privacy: {epsilon: 1}`), "privacy.delta", 1, "missing"},
		{"missing privacy", withLine(1, ``), "privacy", 2, "missing (required)"},
		// Numeric and integer domains.
		{"bins negative", withLine(13, `      o_totalprice: {type: numeric, min: 0, max: 600000, bins: -3}`), "tables[1].columns.o_totalprice.bins", 13, "must be > 0, got -3"},
		{"bins zero", withLine(13, `      o_totalprice: {type: numeric, min: 0, max: 600000, bins: 0}`), "tables[1].columns.o_totalprice.bins", 13, "must be > 0, got 0"},
		{"bins fractional", withLine(13, `      o_totalprice: {type: numeric, min: 0, max: 600000, bins: 2.5}`), "tables[1].columns.o_totalprice.bins", 13, "whole number"},
		{"numeric without bins", withLine(13, `      o_totalprice: {type: numeric, min: 0, max: 600000}`), "tables[1].columns.o_totalprice.bins", 13, "needs bins or bin_edges"},
		{"min equals max", withLine(13, `      o_totalprice: {type: numeric, min: 10, max: 10, bins: 2}`), "tables[1].columns.o_totalprice.max", 13, "must be > min (10), got 10"},
		{"min above max", withLine(15, `      o_shippriority: {type: integer, min: 9, max: 0}`), "tables[1].columns.o_shippriority.max", 15, "must be > min"},
		{"max NaN", withLine(13, `      o_totalprice: {type: numeric, min: 0, max: .NaN, bins: 2}`), "tables[1].columns.o_totalprice.max", 13, "must be finite"},
		{"integer min fractional", withLine(15, `      o_shippriority: {type: integer, min: 0.5, max: 9}`), "tables[1].columns.o_shippriority.min", 15, "must be a whole number, got 0.5"},
		{"integer too many bins", withLine(15, `      o_shippriority: {type: integer, min: 0, max: 9, bins: 11}`), "tables[1].columns.o_shippriority.bins", 15, "must be at most 10, got 11"},
		{"integer too wide", withLine(15, `      o_shippriority: {type: integer, min: 0, max: 1e12}`), "tables[1].columns.o_shippriority", 15, "add bins or bin_edges"},
		{"edges not increasing", withLine(13, `      o_totalprice: {type: numeric, bin_edges: [0, 10, 10]}`), "tables[1].columns.o_totalprice.bin_edges[2]", 13, "strictly increasing: 10 after 10"},
		{"one edge", withLine(13, `      o_totalprice: {type: numeric, bin_edges: [0]}`), "tables[1].columns.o_totalprice.bin_edges", 13, "at least 2 edges, got 1"},
		{"bins and edges", withLine(13, `      o_totalprice: {type: numeric, bins: 3, bin_edges: [0, 1]}`), "tables[1].columns.o_totalprice.bins", 13, "not allowed with bin_edges"},
		{"integer fractional edge", withLine(15, `      o_shippriority: {type: integer, bin_edges: [0, 2.5, 9]}`), "tables[1].columns.o_shippriority.bin_edges[1]", 15, "whole number"},
		{"edge Inf", withLine(13, `      o_totalprice: {type: numeric, bin_edges: [0, .inf]}`), "tables[1].columns.o_totalprice.bin_edges[1]", 13, "must be finite"},
		// Categorical and boolean domains.
		{"empty values", withLine(8, `      c_mktsegment: {type: categorical, values: []}`), "tables[0].columns.c_mktsegment.values", 8, "at least one value"},
		{"missing values", withLine(8, `      c_mktsegment: {type: categorical}`), "tables[0].columns.c_mktsegment.values", 8, "missing"},
		{"duplicate value", withLine(8, `      c_mktsegment: {type: categorical, values: [A, B, A]}`), "tables[0].columns.c_mktsegment.values[2]", 8, `duplicate value "A" (also tables[0].columns.c_mktsegment.values[0])`},
		{"null value", withLine(8, `      c_mktsegment: {type: categorical, values: [A, ~]}`), "tables[0].columns.c_mktsegment.values[1]", 8, "must not be empty"},
		{"clamp categorical", withLine(8, `      c_mktsegment: {type: categorical, values: [A], out_of_domain: clamp}`), "tables[0].columns.c_mktsegment.out_of_domain", 8, `must be one of error, drop, got "clamp"`},
		{"clamp boolean", withLine(16, `      o_urgent: {type: boolean, out_of_domain: clamp}`), "tables[1].columns.o_urgent.out_of_domain", 16, "must be one of error, drop"},
		{"unknown type", withLine(16, `      o_urgent: {type: bool}`), "tables[1].columns.o_urgent.type", 16, `got "bool"`},
		{"missing type", withLine(16, `      o_urgent: {}`), "tables[1].columns.o_urgent.type", 16, "missing (required)"},
		// Dates.
		{"bad date", withLine(14, `      o_orderdate: {type: date, min: 1992-13-01, max: 1998-12-31}`), "tables[1].columns.o_orderdate.min", 14, `must be a date YYYY-MM-DD, got "1992-13-01"`},
		{"date min after max", withLine(14, `      o_orderdate: {type: date, min: 1999-01-01, max: 1998-12-31}`), "tables[1].columns.o_orderdate.max", 14, "must not be before min (1999-01-01)"},
		{"bad granularity", withLine(14, `      o_orderdate: {type: date, min: 1992-01-01, max: 1998-12-31, granularity: week}`), "tables[1].columns.o_orderdate.granularity", 14, `must be one of day, month, year, got "week"`},
		{"date as number", withLine(14, `      o_orderdate: {type: date, min: 1992, max: 1998-12-31}`), "tables[1].columns.o_orderdate.min", 14, "must be a date"},
		// Ranges float64 cannot bin (issue 36: refused only when the
		// release binned its first value).
		{"numeric max 1.7e308", withLine(13, `      o_totalprice: {type: numeric, min: 0, max: 1.7e308, bins: 32}`), "tables[1].columns.o_totalprice.max", 13, "too wide for float64"},
		{"numeric range ±1.7e308", withLine(13, `      o_totalprice: {type: numeric, min: -1.7e308, max: 1.7e308, bins: 2}`), "tables[1].columns.o_totalprice.max", 13, "is NaN"},
		{"numeric bins below resolution", withLine(13, `      o_totalprice: {type: numeric, min: 1, max: 1.0000000000000002, bins: 4}`), "tables[1].columns.o_totalprice.bins", 13, "narrower than float64 can tell apart"},
		// Tables.
		{"duplicate table", withLine(9, `  - name: customer`), "tables[1].name", 9, `duplicate table name "customer" (first at line 3)`},
		{"missing source", withLine(10, `    format: parquet`), "tables[1].source", 9, "missing (required)"},
		{"unknown format", withLine(10, `    source: orders.xlsx`), "tables[1].source", 10, "cannot tell the format"},
		{"bad format", withLine(10, "    source: orders.parquet\n    format: xlsx"), "tables[1].format", 11, `must be one of csv, parquet, got "xlsx"`},
		{"public yes", withLine(10, "    source: orders.parquet\n    public: yes"), "tables[1].public", 11, `must be true or false, got "yes"`},
		{"table name with dot", withLine(9, `  - name: tpch.orders`), "tables[1].name", 9, "must not contain '.'"},
		{"primary key undeclared", withLine(5, `    primary_key: c_name`), "tables[0].primary_key", 5, `column "c_name" is not declared`},
		{"primary key twice", withLine(5, `    primary_key: [c_custkey, c_custkey]`), "tables[0].primary_key[1]", 5, "appears twice"},
		{"no tables", "privacy: {epsilon: 1, delta: 0}\ntables: []\nrelease: {columns: [a]}\n", "tables", 2, "at least one table"},
		{"no columns", withLines(map[int]string{6: "", 7: "", 8: ""}), "tables[0].columns", 3, `table "customer" declares no columns`},
		// Two tables reading one file (see also TestSourcesOnDisk).
		{"self-join through one file", withLine(10, `    source: customer.csv`), "tables[1].source", 10,
			`"customer.csv" is also the source of private table "customer" (line 4): self-joins (two private tables read from one file) are not supported: one individual's tuple would appear in two relations`},
		{"self-join two spellings", withLine(10, `    source: ./data/../customer.csv`), "tables[1].source", 10,
			`"./data/../customer.csv" is the same file as the source "customer.csv" of private table "customer" (line 4): self-joins`},
		{"self-join unclean absolute path", withLines(map[int]string{4: `    source: /nowhere/customer.csv`, 10: `    source: /nowhere/x/../customer.csv`}), "tables[1].source", 10,
			`"/nowhere/x/../customer.csv" is the same file as the source "/nowhere/customer.csv" of private table "customer" (line 4): self-joins`},
		{"self-join one URL", withLines(map[int]string{4: `    source: s3://bucket/t.parquet`, 10: `    source: s3://bucket/t.parquet`}), "tables[1].source", 10,
			`of private table "customer" (line 4): self-joins`},
		{"public table reads a private file", withLine(10, "    source: customer.csv\n    public: true"), "tables[1].source", 10,
			`"customer.csv" is also the source of private table "customer" (line 4): public table "orders" and private table "customer" read the same file; a public table must never change between neighbouring instances`},
		{"private table reads a public file", withLine(4, "    source: orders.parquet\n    public: true"), "tables[1].source", 11,
			`"orders.parquet" is also the source of public table "customer" (line 4): public table "customer" and private table "orders" read the same file`},
		// Join.
		{"join column undeclared", withLine(17, `join: ["orders.o_custkey = customer.c_nationkey"]`), "join[0]", 17, `table "customer" declares no column "c_nationkey"`},
		{"join unknown table", withLine(17, `join: ["order.o_custkey = customer.c_custkey"]`), "join[0]", 17, `no table "order"`},
		{"join same table", withLine(17, `join: ["orders.o_custkey = orders.o_shippriority"]`), "join[0]", 17, `joins table "orders" with itself`},
		{"join types differ", withLine(17, `join: ["orders.o_shippriority = customer.c_custkey"]`), "join[0]", 17, "must have the same type"},
		{"join unqualified", withLine(17, `join: ["o_custkey = customer.c_custkey"]`), "join[0]", 17, "must be written table.column"},
		{"join no equals", withLine(17, `join: ["orders.o_custkey customer.c_custkey"]`), "join[0]", 17, "must read table.column = table.column"},
		{"join orphans unknown", withLine(17, `join: {on: ["orders.o_custkey = customer.c_custkey"], orphans: keep}`), "join.orphans", 17, `must be one of error, drop, got "keep"`},
		{"join mapping unknown key", withLine(17, `join: {equalities: ["orders.o_custkey = customer.c_custkey"]}`), "join", 17, "equalities"},
		{"join.on undeclared", withLine(17, `join: {on: ["orders.o_custkey = customer.c_nationkey"]}`), "join.on[0]", 17, `declares no column "c_nationkey"`},
		{"join missing", withLine(17, `join: []`), "join", 17, "not connected"},
		{"join transitive within table", withLines(map[int]string{
			12: "      o_custkey: {type: key}\n      o_ck2: {type: key}",
			17: `join: ["orders.o_custkey = customer.c_custkey", "orders.o_ck2 = customer.c_custkey"]`,
		}), "join", 18, "equated within one table"},
		{"relationship unknown key", withLine(17, `relationships: [{parent_table_name: customer, parent_primary_key: c_custkey, child_table_name: orders, child_foreign_key: o_custkey, kind: x}]`), "relationships[0]", 17, `unknown key "kind"`},
		{"relationship unknown column", withLine(17, `relationships: [{parent_table_name: customer, parent_primary_key: c_key, child_table_name: orders, child_foreign_key: o_custkey}]`), "relationships[0].parent_primary_key", 17, `declares no column "c_key"`},
		// Release.
		{"release key", withLine(19, `  columns: [c_custkey]`), "release.columns[0]", 19, "key column"},
		{"release unknown", withLine(19, `  columns: [c_name]`), "release.columns[0]", 19, `no table declares a column "c_name"`},
		{"release ambiguous", withLine(16, `      c_mktsegment: {type: boolean}`), "release.columns[0]", 19, `"c_mktsegment" is ambiguous: write one of customer.c_mktsegment, orders.c_mktsegment`},
		{"release empty", withLine(19, `  columns: []`), "release.columns", 19, "at least one column"},
		{"release twice", withLine(19, `  columns: [c_mktsegment, customer.c_mktsegment]`), "release.columns[1]", 19, "customer.c_mktsegment is listed twice"},
		{"unknown method", withLine(19, "  method: fast\n  columns: [c_mktsegment]"), "release.method", 19, `must be one of auto, join-as-one, uniformized, privacy-unit, got "fast"`},
		{"beta zero", withLine(19, "  beta: 0\n  columns: [c_mktsegment]"), "release.beta", 19, "must be > 0, got 0"},
		{"beta NaN", withLine(19, "  beta: .nan\n  columns: [c_mktsegment]"), "release.beta", 19, "must be finite"},
		{"beta text", withLine(19, "  beta: small\n  columns: [c_mktsegment]"), "release.beta", 19, "must be a number"},
		{"rows zero", withLine(19, "  rows: 0\n  columns: [c_mktsegment]"), "release.rows", 19, "whole number of rows ≥ 1, got 0"},
		{"rows fraction", withLine(19, "  rows: 2.5\n  columns: [c_mktsegment]"), "release.rows", 19, "whole number of rows"},
		// The pmw section.
		{"pmw unknown variant", withLine(24, "pmw: {variant: fast}\noutput: {path: out}"), "pmw.variant", 24, `must be one of mwem, paper, got "fast"`},
		{"pmw unknown noise", withLine(24, "pmw: {noise: cauchy}\noutput: {path: out}"), "pmw.noise", 24, `must be one of gaussian, laplace`},
		{"pmw share one", withLine(24, "pmw: {nhat_share: 1}\noutput: {path: out}"), "pmw.nhat_share", 24, "strictly between 0 and 1, got 1"},
		{"pmw share negative", withLine(24, "pmw: {nhat_share: -0.1}\noutput: {path: out}"), "pmw.nhat_share", 24, "strictly between 0 and 1"},
		{"pmw paper noise", withLine(24, "pmw: {variant: paper, noise: gaussian}\noutput: {path: out}"), "pmw.noise", 24, "mwem variant only"},
		{"pmw paper share", withLine(24, "pmw: {variant: paper, nhat_share: 0.1}\noutput: {path: out}"), "pmw.nhat_share", 24, "mwem variant only"},
		{"pmw unknown key", withLine(24, "pmw: {rounds: 3}\noutput: {path: out}"), "pmw", 24, `unknown key "rounds"`},
		{"misspelt release", withLines(map[int]string{18: `releas: {columns: [c_mktsegment]}`, 19: ""}), "", 18, `unknown key "releas"`},
		{"missing release", withLines(map[int]string{18: "", 19: ""}), "release", 1, "missing (required)"},
		// Workload.
		{"marginal not released", withLine(21, `  marginals: [[o_custkey]]`), "workload.marginals[0][0]", 21, "orders.o_custkey is not released"},
		{"marginal empty", withLine(21, `  marginals: [[]]`), "workload.marginals[0]", 21, "at least one column"},
		{"marginal twice", withLine(21, `  marginals: [[o_urgent, o_urgent]]`), "workload.marginals[0][1]", 21, "listed twice"},
		{"range on categorical", withLine(22, `  ranges: [{column: c_mktsegment}]`), "workload.ranges[0].column", 22, "need an integer, numeric or date column"},
		{"range by itself", withLine(22, `  ranges: [{column: o_totalprice, by: [o_totalprice]}]`), "workload.ranges[0].by[0]", 22, "range column itself"},
		{"sum of categorical", withLine(23, `  numeric: [{sum: c_mktsegment}]`), "workload.numeric[0].sum", 23, "needs an integer or numeric column"},
		{"where not released", withLine(23, `  numeric: [{sum: o_totalprice, where: {o_custkey: [1, 2]}}]`), "workload.numeric[0].where.o_custkey", 23, "not released"},
		{"where bad value", withLine(23, `  numeric: [{sum: o_totalprice, where: {c_mktsegment: [TRUCKS]}}]`), "workload.numeric[0].where.c_mktsegment[0]", 23, `"TRUCKS" is not a declared value of customer.c_mktsegment`},
		{"where one bound", withLine(23, `  numeric: [{sum: o_totalprice, where: {o_shippriority: [3]}}]`), "workload.numeric[0].where.o_shippriority", 23, "must be [lo, hi]"},
		{"where reversed", withLine(23, `  numeric: [{sum: o_totalprice, where: {o_shippriority: [3, 1]}}]`), "workload.numeric[0].where.o_shippriority[1]", 23, "must not be below lo"},
		{"where boolean", withLine(23, `  numeric: [{sum: o_totalprice, where: {o_urgent: [maybe]}}]`), "workload.numeric[0].where.o_urgent[0]", 23, "must be true or false"},
		// Output and documents.
		{"output empty path", withLine(24, `output: {path: ""}`), "output.path", 24, "must not be empty"},
		{"yaml syntax", withLine(8, `      c_mktsegment: {type: categorical, values: [AUTOMOBILE, BUILDING}`), "", anyLine, "yaml: did not find expected ',' or ']'"},
		{"two documents", withLine(24, "output: {path: out}\n---\nprivacy: {}"), "", 25, "more than one YAML document"},
		{"yaml indentation", withLine(8, `       c_mktsegment: {type: categorical, values: [AUTOMOBILE, BUILDING]}`), "", anyLine, "yaml: "},
		{"empty", "", "", 0, "empty spec"},
		{"merge key", withLine(16, "      o_urgent: {<<: {type: boolean}}"), "tables[1].columns.o_urgent", 16, "merge keys (<<) are not supported"},
		{"not a mapping", "- a\n- b\n", "", 1, "must be a mapping, got a list"},
		{"universe overflow", universeOverflowSpec, "release.columns", 9, "overflows"},
	}
}

const universeOverflowSpec = `privacy: {epsilon: 1, delta: 0}
tables:
  - name: t
    source: t.csv
    columns:
      a: {type: integer, min: 0, max: 16777215}
      b: {type: integer, min: 0, max: 16777215}
      c: {type: integer, min: 0, max: 16777215}
release: {columns: [a, b, c]}
`

func TestParseUnit(t *testing.T) {
	s, err := Parse([]byte(withLine(1, `privacy: {epsilon: 1, delta: 1e-6, unit: customer}`)), "unit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Privacy.Unit != "customer" {
		t.Errorf("Unit = %q, want customer", s.Privacy.Unit)
	}
	s, err = Parse([]byte(withLine(1, baseLines[0])), "base.yaml")
	if err != nil || s.Privacy.Unit != "" {
		t.Errorf("no unit: got %q, %v; want empty (tuple-level DP)", s.Privacy.Unit, err)
	}
}

func TestParseBad(t *testing.T) {
	for _, tc := range badCases() {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.spec), "bad.yaml")
			if err == nil {
				t.Fatalf("no error; parsed %+v", s)
			}
			if s != nil {
				t.Errorf("non-nil spec with an error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is not a *spec.Error: %T %v", err, err)
			}
			wantLine := tc.line
			if wantLine == anyLine && e.Line > 0 {
				wantLine = e.Line
			}
			if e.File != "bad.yaml" || e.Key != tc.key || e.Line != wantLine {
				t.Errorf("got file %q key %q line %d, want bad.yaml %q %d\n%v", e.File, e.Key, e.Line, tc.key, tc.line, err)
			}
			prefix := "spec: bad.yaml"
			if wantLine > 0 {
				prefix += fmt.Sprintf(":%d", wantLine)
			}
			prefix += ": "
			if tc.key != "" {
				prefix += tc.key + ": "
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.HasPrefix(msg, prefix) {
				t.Errorf("message %q does not start with %q", msg, prefix)
			}
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not contain %q", msg, tc.msg)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	inner := errors.New("must be > 0, got -3")
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "synth.yaml", Line: 12, Key: "tables[0].columns.age.bins", Err: inner}, "spec: synth.yaml:12: tables[0].columns.age.bins: must be > 0, got -3"},
		{Error{File: "synth.yaml", Key: "join", Err: inner}, "spec: synth.yaml: join: must be > 0, got -3"},
		{Error{Line: 3, Err: inner}, "spec: line 3: must be > 0, got -3"},
		{Error{}, "spec: invalid"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
		if !errors.Is(&tc.e, ErrInvalid) {
			t.Errorf("%q does not wrap ErrInvalid", tc.want)
		}
	}
	e := &Error{Err: fmt.Errorf("reading: %w", os.ErrNotExist)}
	if !errors.Is(e, os.ErrNotExist) {
		t.Error("Error does not unwrap Err")
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want a not-exist error", err)
	}
	// A spec that cannot be read is a spec problem (exit code 2).
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("a read error must wrap ErrInvalid: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "spec: ") {
		t.Errorf("message %q lacks the spec: prefix", err)
	}
}

func TestLoadTPCH(t *testing.T) {
	s, err := Load("../examples/tpch/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if s.File != "../examples/tpch/synth.yaml" {
		t.Errorf("File: got %q", s.File)
	}
	if s.Privacy != (Privacy{Epsilon: 1, Delta: 1e-6, Unit: "customer"}) {
		t.Errorf("privacy: got %+v", s.Privacy)
	}
	var names []string
	for _, tab := range s.Tables {
		names = append(names, tab.Name)
		if tab.Public {
			t.Errorf("table %s is public", tab.Name)
		}
		if tab.Format != "csv" {
			t.Errorf("table %s: format %q", tab.Name, tab.Format)
		}
		want := filepath.Join(root, "testdata", "tpch", tab.Name+".csv")
		if tab.Source != want {
			t.Errorf("table %s: source %q, want %q", tab.Name, tab.Source, want)
		}
		if _, err := os.Stat(tab.Source); err != nil {
			t.Errorf("table %s: %v", tab.Name, err)
		}
	}
	if !reflect.DeepEqual(names, []string{"customer", "orders", "lineitem"}) {
		t.Errorf("tables: got %v", names)
	}
	if got := s.Table("lineitem").PrimaryKey; !reflect.DeepEqual(got, []string{"l_orderkey", "l_linenumber"}) {
		t.Errorf("lineitem primary key: got %v", got)
	}
	wantJoin := []JoinEq{
		{ColumnRef{"orders", "o_custkey"}, ColumnRef{"customer", "c_custkey"}},
		{ColumnRef{"lineitem", "l_orderkey"}, ColumnRef{"orders", "o_orderkey"}},
	}
	if !reflect.DeepEqual(s.Join, wantJoin) {
		t.Errorf("join: got %v", s.Join)
	}
	wantRelease := []ColumnRef{{"customer", "c_mktsegment"}, {"orders", "o_orderpriority"}, {"lineitem", "l_returnflag"}, {"lineitem", "l_quantity"}, {"orders", "o_orderdate"}}
	if !reflect.DeepEqual(s.Release.Columns, wantRelease) || s.Release.Method != Auto {
		t.Errorf("release: got %+v", s.Release)
	}
	sizes := map[string]int{}
	for i, c := range s.ReleaseColumns() {
		sizes[s.Release.Columns[i].Column] = c.Size()
	}
	wantSizes := map[string]int{"c_mktsegment": 5, "o_orderpriority": 5, "l_returnflag": 3, "l_quantity": 10, "o_orderdate": 7}
	if !reflect.DeepEqual(sizes, wantSizes) {
		t.Errorf("sizes: got %v, want %v", sizes, wantSizes)
	}
	if u, ok := s.UniverseSize(); !ok || u != 5*5*3*10*7 {
		t.Errorf("universe: got %d %v", u, ok)
	}
	q := s.Column(ColumnRef{"lineitem", "l_quantity"})
	if q.Type != Integer || q.Min != 1 || q.Max != 50 || q.Bins != 10 {
		t.Errorf("l_quantity: got %+v", q)
	}
	d := s.Column(ColumnRef{"orders", "o_orderdate"})
	if d.Granularity != Year || !d.DateMin.Equal(time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)) || !d.DateMax.Equal(time.Date(1998, 12, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("o_orderdate: got %+v", d)
	}
	if got := len(s.Workload.Marginals); got < 7 {
		t.Errorf("marginals: got %d", got)
	}
	for _, r := range s.Release.Columns {
		found := false
		for _, m := range s.Workload.Marginals {
			if len(m) == 1 && m[0] == r {
				found = true
			}
		}
		if !found {
			t.Errorf("no 1-way marginal of %s", r)
		}
	}
	if want := filepath.Join(root, "out", "tpch"); s.Output.Path != want {
		t.Errorf("output: got %q, want %q", s.Output.Path, want)
	}
}

func TestLoadAdult(t *testing.T) {
	s, err := Load("../examples/adult/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tables) != 1 || s.Tables[0].Name != "adult" || len(s.Join) != 0 {
		t.Fatalf("tables: got %+v", s.Tables)
	}
	wantSizes := map[string]int{"age": 8, "workclass": 9, "education": 16, "marital-status": 7, "race": 5, "sex": 2, "hours-per-week": 10, "income": 2}
	got := map[string]int{}
	for i, c := range s.ReleaseColumns() {
		got[s.Release.Columns[i].Column] = c.Size()
	}
	if !reflect.DeepEqual(got, wantSizes) {
		t.Errorf("sizes: got %v, want %v", got, wantSizes)
	}
	u, ok := s.UniverseSize()
	if !ok || u != 1612800 || u > 2e6 {
		t.Errorf("universe: got %d %v", u, ok)
	}
	age := s.Column(ColumnRef{"adult", "age"})
	if age.Min != 17 || age.Max != 90 {
		t.Errorf("age range: got [%v, %v], want [17, 90]", age.Min, age.Max)
	}
	if wc := s.Column(ColumnRef{"adult", "workclass"}); wc.Values[0] != "?" {
		t.Errorf("workclass values: got %v", wc.Values)
	}
	if len(s.Workload.Numeric) != 2 || s.Workload.Numeric[1].Where[1].Lo != 40 || s.Workload.Numeric[1].Where[1].Hi != 60 {
		t.Errorf("numeric: got %+v", s.Workload.Numeric)
	}
	if s.Workload.Ranges[1].By != nil {
		t.Errorf("range without by: got %v", s.Workload.Ranges[1].By)
	}
}

// TestAdultValuesMatchData checks that every categorical value in the adult
// data is declared and every declared value occurs, and that the integer
// columns stay inside their ranges.
func TestAdultValuesMatchData(t *testing.T) {
	s, err := Load("../examples/adult/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkCSV(t, s, s.Tables[0])
}

// TestTPCHValuesMatchData does the same for the three TPC-H tables.
func TestTPCHValuesMatchData(t *testing.T) {
	s, err := Load("../examples/tpch/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tab := range s.Tables {
		checkCSV(t, s, tab)
	}
}

func TestDigest(t *testing.T) {
	path := "../examples/tpch/synth.yaml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if got, want := s.Digest(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("digest: got %s, want %s", got, want)
	}
	s2, err := Parse(append(data, '\n'), path)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Digest() == s.Digest() {
		t.Error("digest ignores a changed byte")
	}
	data[0] = 'X' // Parse must have kept its own copy
	if s3, _ := Load(path); s3.Digest() != s.Digest() {
		t.Error("digest not stable")
	}
}

func TestPathResolution(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	src := withLine(4, `    source: data/customer.csv`)
	src = strings.Replace(src, "source: orders.parquet", "source: /abs/orders.parquet", 1)
	src = strings.Replace(src, "output: {path: out}", "output: {path: s3://bucket/out}", 1)
	s, err := Parse([]byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "data", "customer.csv"); s.Tables[0].Source != want {
		t.Errorf("relative source: got %q, want %q", s.Tables[0].Source, want)
	}
	if s.Tables[1].Source != "/abs/orders.parquet" {
		t.Errorf("absolute source: got %q", s.Tables[1].Source)
	}
	if s.Output.Path != "s3://bucket/out" {
		t.Errorf("URL output: got %q", s.Output.Path)
	}
	s, err = Parse([]byte(src), filepath.Join("some", "dir", "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "some", "dir", "data", "customer.csv"); s.Tables[0].Source != want {
		t.Errorf("source relative to the spec: got %q, want %q", s.Tables[0].Source, want)
	}
}

func TestParseAliasesAndBinEdges(t *testing.T) {
	src := `privacy: {epsilon: 2, delta: 0}
tables:
  - name: t
    source: t.parquet
    format: parquet
    public: false
    columns:
      q: &dom {type: integer, bin_edges: [1, 10, 25, 51]}
      r: *dom
      x: {type: numeric, bin_edges: [0, 0.5, 1]}
      d: {type: date, min: 2020-02-15, max: 2020-02-15}
      seg: {type: categorical, values: ["yes", "no", 1, 1.0]}
release: {columns: [q, r, x, d, seg]}
workload:
  numeric: [{sum: x, where: {d: [2020-01-01, 2020-12-31], seg: ["1.0"]}}]
`
	s, err := Parse([]byte(src), "alias.yaml")
	if err != nil {
		t.Fatal(err)
	}
	q, r := s.Column(ColumnRef{"t", "q"}), s.Column(ColumnRef{"t", "r"})
	if q.Min != 1 || q.Max != 50 || q.Size() != 3 || !reflect.DeepEqual(q, &Column{Name: "q", Type: Integer, Min: 1, Max: 50, BinEdges: []float64{1, 10, 25, 51}, OutOfDomain: OutOfDomainError}) {
		t.Errorf("q: got %+v", q)
	}
	if r.Name != "r" || !reflect.DeepEqual(r.BinEdges, q.BinEdges) {
		t.Errorf("alias r: got %+v", r)
	}
	if x := s.Column(ColumnRef{"t", "x"}); x.Min != 0 || x.Max != 1 || x.Size() != 2 {
		t.Errorf("x: got %+v", x)
	}
	if d := s.Column(ColumnRef{"t", "d"}); d.Size() != 1 || d.Granularity != Day {
		t.Errorf("d: got %+v", d)
	}
	if seg := s.Column(ColumnRef{"t", "seg"}); !reflect.DeepEqual(seg.Values, []string{"yes", "no", "1", "1.0"}) {
		t.Errorf("seg values kept as written: got %q", seg.Values)
	}
	c := s.Workload.Numeric[0].Where[0]
	if !c.DateLo.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) || !c.DateHi.Equal(time.Date(2020, 12, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("date condition: got %+v", c)
	}
	if s.Tables[0].Public || len(s.Join) != 0 {
		t.Errorf("public: got %+v", s.Tables[0])
	}
}

func TestLoadSDV(t *testing.T) {
	s, err := Load("testdata/sdv/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.SDVMetadata != "metadata.json" {
		t.Errorf("SDVMetadata: got %q", s.SDVMetadata)
	}
	wantJoin := []JoinEq{
		{ColumnRef{"orders", "o_custkey"}, ColumnRef{"customer", "c_custkey"}},
		{ColumnRef{"lineitem", "l_orderkey"}, ColumnRef{"orders", "o_orderkey"}},
	}
	if !reflect.DeepEqual(s.Join, wantJoin) {
		t.Errorf("join from relationships: got %v", s.Join)
	}
	if got := s.Table("lineitem").PrimaryKey; !reflect.DeepEqual(got, []string{"l_orderkey", "l_linenumber"}) {
		t.Errorf("lineitem primary key: got %v", got)
	}
	var cols []string
	for _, c := range s.Table("orders").Columns {
		cols = append(cols, c.Name+":"+string(c.Type))
	}
	want := []string{"o_orderpriority:categorical", "o_orderdate:date", "o_custkey:key", "o_orderkey:key"}
	if !reflect.DeepEqual(cols, want) {
		t.Errorf("orders columns: got %v, want %v", cols, want)
	}
	if s.Release.Method != Uniformized {
		t.Errorf("method: got %q", s.Release.Method)
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 3 || len(h.Attributes()) != 2 {
		t.Errorf("hypergraph: %d relations, attributes %v", h.Len(), h.Attributes())
	}
}

func TestSDVBad(t *testing.T) {
	meta, err := os.ReadFile("testdata/sdv/metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile("testdata/sdv/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		meta, spec func(string) string
		file, key  string
		line       int
		msg        string
	}{
		{"sdtype contradicts", nil, func(s string) string {
			return strings.Replace(s, "l_quantity: {type: integer", "l_quantity: {type: categorical, values: [a]} #", 1)
		}, "synth.yaml", "tables[2].columns.l_quantity.type", 18, `categorical contradicts the SDV metadata's sdtype "numerical"`},
		{"numerical needs a type", nil, func(s string) string {
			return strings.Replace(s, "l_quantity: {type: integer,", "l_quantity: {", 1)
		}, "synth.yaml", "tables[2].columns.l_quantity.type", 18, `the SDV sdtype "numerical" does not say which`},
		{"column not in metadata", nil, func(s string) string {
			return strings.Replace(s, "l_quantity:", "l_qty:", 1)
		}, "synth.yaml", "tables[2].columns.l_qty", 18, `not in the SDV metadata`},
		{"primary key differs", nil, func(s string) string {
			return strings.Replace(s, "    source: ../../../testdata/tpch/lineitem.csv", "    source: ../../../testdata/tpch/lineitem.csv\n    primary_key: l_orderkey", 1)
		}, "synth.yaml", "tables[2].primary_key", 17, "differs from the SDV metadata's primary key"},
		{"bad json", func(s string) string { return strings.Replace(s, `"orders": {`, `"orders" {`, 1) }, nil,
			"metadata.json", "", 13, "not SDV metadata JSON"},
		{"wrong type", func(s string) string { return strings.Replace(s, `"tables": {`, `"tables": [`, 1) }, nil,
			"metadata.json", "", 4, "not SDV metadata JSON"},
		{"single-table version", func(s string) string { return strings.Replace(s, "MULTI_TABLE_V1", "SINGLE_TABLE_V1", 1) }, nil,
			"metadata.json", "METADATA_SPEC_VERSION", 0, "want multi-table metadata"},
		{"relationship column missing", func(s string) string {
			return strings.Replace(s, `"child_foreign_key": "l_orderkey"`, `"child_foreign_key": "l_order"`, 1)
		}, nil,
			"metadata.json", "relationships[1].child_foreign_key", 0, `table "lineitem" has no column "l_order"`},
		{"missing file", nil, func(s string) string {
			return strings.Replace(s, "sdv_metadata: metadata.json", "sdv_metadata: nope.json", 1)
		},
			"synth.yaml", "sdv_metadata", 4, "no such file"},
		{"self-join through one file", nil, func(s string) string {
			return strings.Replace(s, "tpch/lineitem.csv", "tpch/orders.csv", 1)
		}, "synth.yaml", "tables[2].source", 16, `is also the source of private table "orders" (line 11): self-joins`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m, sp := string(meta), string(spec)
			if tc.meta != nil {
				m = tc.meta(m)
			}
			if tc.spec != nil {
				sp = tc.spec(sp)
			}
			if m == string(meta) && sp == string(spec) {
				t.Fatal("the case changes nothing")
			}
			if err := os.WriteFile(filepath.Join(dir, "metadata.json"), []byte(m), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "synth.yaml")
			if err := os.WriteFile(path, []byte(sp), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			var e *Error
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &e) {
				t.Fatalf("got %v, want a *spec.Error", err)
			}
			wantFile := tc.file
			if wantFile == "synth.yaml" {
				wantFile = path
			}
			if e.File != wantFile || e.Key != tc.key || e.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got file %q key %q line %d %q; want %q %q %d %q", e.File, e.Key, e.Line, err, wantFile, tc.key, tc.line, tc.msg)
			}
		})
	}
}

// TestReleaseBeta: an explicit β is kept; without it Beta is 0 (the
// default ε/ln(1/δ) is applied by the mechanism).
func TestReleaseBeta(t *testing.T) {
	s, err := Parse([]byte(withLine(19, "  beta: 0.05\n  columns: [c_mktsegment, o_totalprice, o_orderdate, o_shippriority, o_urgent]")), "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Release.Beta != 0.05 {
		t.Fatalf("beta = %v, want 0.05", s.Release.Beta)
	}
	s, err = Parse([]byte(withLines(nil)), "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Release.Beta != 0 {
		t.Fatalf("beta = %v without release.beta, want 0", s.Release.Beta)
	}
}

func TestParseRows(t *testing.T) {
	s, err := Parse([]byte(withLine(19, "  rows: 5000\n  columns: [c_mktsegment, o_totalprice, o_orderdate, o_shippriority, o_urgent]")), "synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Release.Rows != 5000 {
		t.Fatalf("release.rows = %d, want 5000", s.Release.Rows)
	}
}

func TestParsePMW(t *testing.T) {
	for _, tc := range []struct {
		line string
		want PMW
	}{
		{"output: {path: out}", PMW{}},
		{"pmw: {variant: paper}\noutput: {path: out}", PMW{Variant: PMWVariantPaper}},
		{"pmw: {variant: mwem, noise: laplace, nhat_share: 0.1}\noutput: {path: out}", PMW{Variant: PMWVariantMWEM, Noise: PMWNoiseLaplace, NHatShare: 0.1}},
	} {
		s, err := Parse([]byte(withLine(24, tc.line)), "synth.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if s.PMW != tc.want {
			t.Errorf("%q: pmw = %+v, want %+v", tc.line, s.PMW, tc.want)
		}
	}
}
