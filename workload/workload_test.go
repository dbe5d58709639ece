package workload

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/synthfile"
)

// TestNumericFamilyBruteForce checks the weighted families of the Adult
// example's numeric sums cell by cell: a histogram holding one row in cell
// x must answer sum(c) WHERE ... with the representative value of c when
// x's representatives satisfy the conditions (evaluated here directly on
// the decoded row), and 0 otherwise. The row-level evaluation shares no
// code with the weight table.
func TestNumericFamilyBruteForce(t *testing.T) {
	s := releasetest.LoadSpec(t, "../examples/adult/synth.yaml")
	names := layout.ColumnNames(s)
	dec, err := synthfile.NewDecoder(names, s.ReleaseColumns())
	if err != nil {
		t.Fatal(err)
	}
	fams, err := workload(s, dec)
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, n := range names {
		col[n] = i
	}
	sizes := s.ReleaseSizes()
	rng := rand.New(rand.NewPCG(1, 2))
	checked, nonzero := 0, 0
	var weighted []queryFamily
	for _, f := range fams {
		if f.weights != nil {
			weighted = append(weighted, f)
		}
	}
	if len(weighted) != len(s.Workload.Numeric) {
		t.Fatalf("%d weighted families for %d numeric queries", len(weighted), len(s.Workload.Numeric))
	}
	for qi, q := range s.Workload.Numeric {
		f := weighted[qi]
		for trial := 0; trial < 3000; trial++ {
			x := rng.Int64N(dec.Size())
			row, err := dec.Row(x)
			if err != nil {
				t.Fatal(err)
			}
			want := 0.0
			in := true
			for _, c := range q.Where {
				v := row[col[c.Column.Column]]
				switch v := v.(type) {
				case string:
					ok := false
					for _, s := range c.Values {
						ok = ok || s == v
					}
					in = in && ok
				case int64:
					in = in && float64(v) >= c.Lo && float64(v) <= c.Hi
				default:
					t.Fatalf("unexpected condition value %T", v)
				}
			}
			if in {
				want = float64(row[col[q.Sum.Column]].(int64))
				nonzero++
			}
			wm := marginal([]engine.Cell{{Index: x, Count: 1}}, sizes, f.wcols)
			got := 0.0
			for l, w := range f.weights {
				got += w * wm[l]
			}
			got *= f.scale
			if math.Abs(got-want) > 1e-9 {
				t.Fatalf("%s at cell %d (%v): got %v, want %v", f.name, x, row, got, want)
			}
			checked++
		}
	}
	if nonzero == 0 {
		t.Fatalf("all %d checks expected 0: the test would pass vacuously", checked)
	}
	for _, f := range fams {
		for _, w := range f.weights {
			if w < -1 || w > 1 {
				t.Fatalf("%s: weight %v outside [−1, 1]", f.name, w)
			}
		}
	}
}
