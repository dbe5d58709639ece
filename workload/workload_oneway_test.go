package workload

import (
	"slices"
	"testing"

	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/spec"
)

// TestWorkloadAddsOneWay: a listed workload that leaves released columns
// out of its 1-way marginals gets them added (once, after the listed
// families), unless the spec says one_way: false; an empty workload keeps
// the default 1- and 2-way marginals.
func TestWorkloadAddsOneWay(t *testing.T) {
	s := releasetest.LoadSpec(t, "../examples/tpch/synth.yaml")
	cols := s.Release.Columns // c_mktsegment, o_orderpriority, l_returnflag, l_quantity, o_orderdate
	names := layout.ColumnNames(s)
	dec, err := synthfile.NewDecoder(names, s.ReleaseColumns())
	if err != nil {
		t.Fatal(err)
	}
	oneWay := func(fams []queryFamily) []string {
		var out []string
		for _, f := range fams {
			if f.weights == nil && f.rng < 0 && len(f.cols) == 1 {
				out = append(out, names[f.cols[0]])
			}
		}
		return out
	}

	s.Workload = spec.Workload{
		Marginals: [][]spec.ColumnRef{{cols[0], cols[1]}, {cols[2]}},
		Ranges:    []spec.RangeQuery{{Column: cols[3]}},
	}
	fams, err := workload(s, dec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := oneWay(fams), []string{names[2], names[0], names[1], names[3], names[4]}; !slices.Equal(got, want) {
		t.Errorf("1-way marginals %q, want %q (listed first, then the added ones in release order)", got, want)
	}
	if len(fams) != 3+4 {
		t.Errorf("%d families, want 7", len(fams))
	}
	eff := Effective(s)
	if len(eff) != len(fams) {
		t.Fatalf("Effective has %d families, workload %d", len(eff), len(fams))
	}
	for i, f := range eff {
		if f.Name != fams[i].name {
			t.Errorf("family %d: Effective %q, workload %q", i, f.Name, fams[i].name)
		}
		if f.Added != (i >= 3) {
			t.Errorf("family %q: Added = %v", f.Name, f.Added)
		}
	}
	if pf, err := Families(s); err != nil || len(pf) != len(fams) {
		t.Errorf("Families: %d, %v", len(pf), err)
	}

	s.Workload.NoOneWay = true
	fams, err = workload(s, dec)
	if err != nil {
		t.Fatal(err)
	}
	if got := oneWay(fams); !slices.Equal(got, []string{names[2]}) || len(fams) != 3 {
		t.Errorf("one_way: false: %d families, 1-way %q; want the 3 listed", len(fams), got)
	}

	s.Workload = spec.Workload{}
	fams, err = workload(s, dec)
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 5+10 || !slices.Equal(oneWay(fams), names) {
		t.Errorf("empty workload: %d families, 1-way %q; want 15, every column", len(fams), oneWay(fams))
	}
	for _, f := range Effective(s) {
		if !f.Added {
			t.Errorf("default family %q not marked Added", f.Name)
		}
	}
}

// TestEffectiveWorkloadNumericNames: the numeric families' names agree
// with workload's.
func TestEffectiveWorkloadNumericNames(t *testing.T) {
	s := releasetest.LoadSpec(t, "../examples/adult/synth.yaml")
	dec, err := synthfile.NewDecoder(layout.ColumnNames(s), s.ReleaseColumns())
	if err != nil {
		t.Fatal(err)
	}
	fams, err := workload(s, dec)
	if err != nil {
		t.Fatal(err)
	}
	eff := Effective(s)
	if len(eff) != len(fams) {
		t.Fatalf("%d vs %d families", len(eff), len(fams))
	}
	for i := range eff {
		if eff[i].Name != fams[i].name {
			t.Errorf("family %d: %q vs %q", i, eff[i].Name, fams[i].name)
		}
	}
	if eff[len(eff)-1].Kind != "sum" || eff[len(eff)-1].Name != "sum(age) where sex,hours-per-week" {
		t.Errorf("last family %+v", eff[len(eff)-1])
	}
}
