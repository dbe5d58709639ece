package spec

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// withMeasures is the base spec with release.measures (and more) written
// on line 20, after release.columns (line 19).
func withMeasures(lines string) string {
	return withLine(19, baseLines[18]+"\n"+lines)
}

func TestParseMeasures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines string
		want  []ColumnRef
		share float64
	}{
		{"absent", "", nil, 0},
		{"released numeric, default share", "  measures: [o_totalprice]", []ColumnRef{{"orders", "o_totalprice"}}, DefaultMeasuresShare},
		{"qualified integer, given share", "  measures: [orders.o_shippriority, o_totalprice]\n  measures_share: 0.3",
			[]ColumnRef{{"orders", "o_shippriority"}, {"orders", "o_totalprice"}}, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := withLine(1, baseLines[0])
			if tc.lines != "" {
				text = withMeasures(tc.lines)
			}
			s, err := Parse([]byte(text), "m.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Release.Measures, tc.want) || s.Release.MeasuresShare != tc.share {
				t.Fatalf("measures %v share %v, want %v %v", s.Release.Measures, s.Release.MeasuresShare, tc.want, tc.share)
			}
		})
	}
}

// TestParseMeasuresUnreleased accepts a measure that is not released.
func TestParseMeasuresUnreleased(t *testing.T) {
	text := withLines(map[int]string{
		19: "  columns: [c_mktsegment, o_orderdate, o_shippriority, o_urgent]\n  measures: [o_totalprice]",
		22: "  ranges: [{column: o_shippriority, by: [c_mktsegment]}]",
		23: "  numeric: [{sum: o_totalprice, where: {o_shippriority: [0, 3]}}]",
	})
	s, err := Parse([]byte(text), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := []ColumnRef{{"orders", "o_totalprice"}}; !reflect.DeepEqual(s.Release.Measures, want) {
		t.Fatalf("measures %v, want %v", s.Release.Measures, want)
	}
}

func TestParseMeasuresErrors(t *testing.T) {
	for _, tc := range []badCase{
		{"unknown column", withMeasures("  measures: [o_price]"), "release.measures[0]", 20, `no table declares a column "o_price"`},
		{"unknown qualified column", withMeasures("  measures: [orders.nope]"), "release.measures[0]", 20, `table "orders" declares no column "nope"`},
		{"categorical", withMeasures("  measures: [o_totalprice, c_mktsegment]"), "release.measures[1]", 20, "customer.c_mktsegment is categorical; a measure needs an integer or numeric column"},
		{"date", withMeasures("  measures: [o_orderdate]"), "release.measures[0]", 20, "is date; a measure needs"},
		{"boolean", withMeasures("  measures: [o_urgent]"), "release.measures[0]", 20, "is boolean; a measure needs"},
		{"key", withMeasures("  measures: [o_custkey]"), "release.measures[0]", 20, "is key; a measure needs"},
		{"duplicate", withMeasures("  measures:\n    - o_totalprice\n    - orders.o_totalprice"), "release.measures[1]", 22, "orders.o_totalprice is listed twice"},
		{"not a list", withMeasures("  measures: o_totalprice"), "release.measures", 20, ""},
		{"share zero", withMeasures("  measures: [o_totalprice]\n  measures_share: 0"), "release.measures_share", 21, "strictly between 0 and 1, got 0"},
		{"share one", withMeasures("  measures: [o_totalprice]\n  measures_share: 1"), "release.measures_share", 21, "strictly between 0 and 1, got 1"},
		{"share NaN", withMeasures("  measures: [o_totalprice]\n  measures_share: .nan"), "release.measures_share", 21, ""},
		{"share without measures", withMeasures("  measures_share: 0.2"), "release.measures_share", 20, "needs release.measures"},
		{"unknown release key", withMeasures("  measure: [o_totalprice]"), "release", 20, `unknown key "measure"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.spec), "bad.yaml")
			if err == nil {
				t.Fatalf("no error; parsed %+v", s.Release)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is not a *spec.Error: %T %v", err, err)
			}
			if e.File != "bad.yaml" || e.Key != tc.key || e.Line != tc.line {
				t.Errorf("got file %q key %q line %d, want bad.yaml %q %d\n%v", e.File, e.Key, e.Line, tc.key, tc.line, err)
			}
			if prefix := fmt.Sprintf("spec: bad.yaml:%d: %s: ", tc.line, tc.key); !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("message %q does not start with %q", err, prefix)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q does not contain %q", err, tc.msg)
			}
		})
	}
}
