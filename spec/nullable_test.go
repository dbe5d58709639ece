package spec

import (
	"errors"
	"strings"
	"testing"
)

// TestParseNullable checks that nullable: true puts NULL in the domain of
// every non-key type, as one more cell after the values, and that the
// values keep their cells.
func TestParseNullable(t *testing.T) {
	s, err := Parse([]byte(withLines(map[int]string{
		8:  `      c_mktsegment: {type: categorical, values: [AUTOMOBILE, BUILDING], nullable: true}`,
		13: `      o_totalprice: {type: numeric, min: 0, max: 600000, bins: 32, nullable: true}`,
		14: `      o_orderdate: {type: date, min: 1992-01-01, max: 1998-12-31, granularity: year, nullable: true}`,
		15: `      o_shippriority: {type: integer, min: 0, max: 9, nullable: false}`,
		16: `      o_urgent: {type: boolean, nullable: true}`,
	})), "n.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref            string
		size, nullCell int
	}{
		{"customer.c_mktsegment", 3, 2},
		{"orders.o_totalprice", 33, 32},
		{"orders.o_orderdate", 8, 7},
		{"orders.o_shippriority", 10, -1},
		{"orders.o_urgent", 3, 2},
	} {
		tab, col, _ := strings.Cut(tc.ref, ".")
		c := s.Column(ColumnRef{Table: tab, Column: col})
		if c.Size() != tc.size || c.NullCell() != tc.nullCell || c.ValueSize() != tc.size-min(1, tc.nullCell+1) {
			t.Errorf("%s: Size %d, NullCell %d, ValueSize %d; want %d, %d", tc.ref, c.Size(), c.NullCell(), c.ValueSize(), tc.size, tc.nullCell)
		}
		if b, err := c.Bin(""); tc.nullCell >= 0 && (err != nil || b != tc.nullCell) {
			t.Errorf("%s: Bin(\"\") = %d, %v; want the NULL cell %d", tc.ref, b, err, tc.nullCell)
		} else if tc.nullCell < 0 && !errors.Is(err, ErrOutOfDomain) {
			t.Errorf("%s: Bin(\"\") = %d, %v; want ErrOutOfDomain", tc.ref, b, err)
		}
	}
	// The values keep the cells they have without nullable.
	price := s.Column(ColumnRef{Table: "orders", Column: "o_totalprice"})
	if e := price.Edges(); len(e) != 33 || e[32] != 600000 {
		t.Errorf("edges of a nullable numeric column: %d edges ending %v", len(e), e[len(e)-1])
	}
	if b, err := price.Bin("600000"); err != nil || b != 31 {
		t.Errorf("Bin(600000) = %d, %v; want 31", b, err)
	}
	if n, ok := s.UniverseSize(); !ok || n != 3*33*8*10*3 {
		t.Errorf("UniverseSize = %d, %v; want %d", n, ok, 3*33*8*10*3)
	}
}

// TestParseNullableBad checks that keys, join columns, primary keys and
// measures cannot be nullable, and that nullable takes a boolean.
func TestParseNullableBad(t *testing.T) {
	for _, tc := range []struct {
		name, spec, key, msg string
	}{
		{"key", withLine(7, `      c_custkey: {type: key, nullable: true}`), "tables[0].columns.c_custkey.nullable", "a key column cannot be nullable"},
		{"join column", withLines(map[int]string{
			8:  `      c_mktsegment: {type: categorical, values: [AUTOMOBILE, BUILDING], nullable: true}`,
			12: "      o_custkey: {type: key}\n      o_segment: {type: categorical, values: [AUTOMOBILE, BUILDING]}",
			17: `join: ["orders.o_custkey = customer.c_custkey", "orders.o_segment = customer.c_mktsegment"]`,
		}), "join[1]", "customer.c_mktsegment is nullable: a join column cannot be"},
		{"primary key", withLines(map[int]string{
			5: `    primary_key: [c_custkey, c_mktsegment]`,
			8: `      c_mktsegment: {type: categorical, values: [AUTOMOBILE, BUILDING], nullable: true}`,
		}), "tables[0].primary_key[1]", `column "c_mktsegment" is nullable: a primary key column cannot be`},
		{"measure", withLines(map[int]string{
			13: `      o_totalprice: {type: numeric, min: 0, max: 600000, bins: 32, nullable: true}`,
			19: "  columns: [c_mktsegment, o_orderdate, o_shippriority, o_urgent]\n  measures: [o_totalprice]",
			22: ``,
			23: ``,
		}), "release.measures[0]", "orders.o_totalprice is nullable: a measure cannot be"},
		{"not a boolean", withLine(16, `      o_urgent: {type: boolean, nullable: maybe}`), "tables[1].columns.o_urgent.nullable", "must be true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.spec), "bad.yaml")
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v, want a *spec.Error wrapping ErrInvalid", err)
			}
			if e.Key != tc.key || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q (key %q), want key %q and %q", err, e.Key, tc.key, tc.msg)
			}
		})
	}
}
