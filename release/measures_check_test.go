package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
)

// TestCheckMeasures: CheckMeasures returns, from the spec alone, exactly
// the refusal Run stops with because of release.measures (same error
// category, a message naming release.measures), and nil where Run
// accepts the measures or has none.
func TestCheckMeasures(t *testing.T) {
	for _, c := range []struct {
		name    string
		join    bool
		extra   string
		edit    func(*spec.Spec)
		wantErr error
	}{
		{name: "no measures", extra: "", edit: func(s *spec.Spec) { s.Workload.Numeric = nil }},
		{name: "accepted", extra: "  measures: [amount]\n"},
		{name: "accepted on a join", join: true, extra: "  measures: [amount]\n"},
		{name: "uniformized", join: true, extra: "  measures: [amount]\n",
			edit: func(s *spec.Spec) { s.Release.Method = spec.Uniformized }, wantErr: ErrUnsupported},
		{name: "accepted under a privacy unit", join: true, extra: "  measures: [amount]\n",
			edit: func(s *spec.Spec) {
				s.Privacy.Unit = "customer"
				s.Release.Method = spec.Auto
				s.Tables[0].PrimaryKey = []string{"c_key"}
			}},
		{name: "privacy unit, tables output", join: true, extra: "  measures: [amount]\n",
			edit: func(s *spec.Spec) {
				s.Privacy.Unit = "customer"
				s.Release.Method = spec.Auto
				s.Release.Output = spec.OutputTables
				s.Tables[0].PrimaryKey = []string{"c_key"}
			}, wantErr: ErrUnsupported},
		{name: "categorical measure", extra: "  measures: [amount]\n",
			edit: func(s *spec.Spec) {
				s.Release.Measures = []spec.ColumnRef{{Table: "orders", Column: "seg"}}
				s.Release.Columns = []spec.ColumnRef{{Table: "orders", Column: "lvl"}}
				s.Workload.Marginals = [][]spec.ColumnRef{{{Table: "orders", Column: "lvl"}}}
				s.Workload.Numeric = nil
			}, wantErr: spec.ErrInvalid},
		{name: "share out of range", extra: "  measures: [amount]\n",
			edit: func(s *spec.Spec) { s.Release.MeasuresShare = 1 }, wantErr: spec.ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := measureInstance(t, c.join, c.extra)
			if c.edit != nil {
				c.edit(s)
			}
			err := CheckMeasures(s, 0)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("CheckMeasures: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), "release.measures") {
				t.Fatalf("CheckMeasures: %v, want %v naming release.measures", err, c.wantErr)
			}
			_, runErr := Run(context.Background(), Options{Spec: s, OutDir: filepath.Join(t.TempDir(), "out"), Engine: "duckdb", Source: dp.NewSeededSource(1)})
			if runErr == nil || runErr.Error() != err.Error() {
				t.Errorf("Run: %v\nCheckMeasures: %v\nwant the same refusal", runErr, err)
			}
		})
	}
}

// TestReleaseMeasureProgressAndScale: the measures stage reports
// PhaseMeasures from 0 to M·T of M·T, in order, and the release publishes
// each measure's error scale — b·Δ·⌈Δ̃⌉/ε_m, its 95% half-width
// ln(20)× that, the DP total Σ SUMhat — in the summary, in the JSON
// report's measures parameter and in a section of the Markdown report.
func TestReleaseMeasureProgressAndScale(t *testing.T) {
	s := measureInstance(t, true, "  measures: [amount]\n  measures_share: 0.5\n")
	dir := t.TempDir()
	var got [][2]int64
	sum, err := Run(context.Background(), Options{Spec: s, OutDir: dir, Engine: "duckdb", Source: dp.NewSeededSource(3), Overwrite: true,
		Progress: func(p Phase, done, total int64) {
			if p == PhaseMeasures {
				got = append(got, [2]int64{done, total})
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 11 {
		t.Fatalf("measures progress %v, want 0…10 of 10", got)
	}
	for i, g := range got {
		if g != [2]int64{int64(i), 10} {
			t.Fatalf("measures progress %v, want 0…10 of 10", got)
		}
	}
	m := sum.Measures[0]
	e := m.ErrorScale
	// amount ∈ [−50, 400] in units of 1: Δ = 400; ε_m = 0.5·8.
	d := math.Ceil(m.DeltaTilde)
	wantScale := 400 * d / 4
	var total float64
	for _, a := range m.CellSums {
		total += a
	}
	if math.Abs(e.NoiseScale-wantScale) > 1e-9*wantScale || math.Abs(e.Noise95-math.Log(20)*wantScale) > 1e-9*wantScale ||
		e.SumSensitivity != 400*d || math.Abs(e.DPTotal-total) > 1e-9*math.Abs(total) || e.Signal != (e.Noise95 < math.Abs(total)) {
		t.Fatalf("error scale %+v (Δ̃ = %v, Σ SUMhat = %v), want noise scale %v", e, m.DeltaTilde, total, wantScale)
	}
	// The whole-file total is measured at MeasureTotalShare of ε_m, the
	// atoms at MeasureAtomShare.
	if wt := 400 * d / (MeasureTotalShare * 4); math.Abs(e.TotalNoiseScale-wt) > 1e-9*wt || math.Abs(e.TotalNoise95-math.Log(20)*wt) > 1e-9*wt ||
		math.Abs(e.AtomNoiseScale-400*d/(MeasureAtomShare*4)) > 1e-9*wt {
		t.Fatalf("error scale %+v, want total noise scale %v", e, wt)
	}
	b, err := os.ReadFile(filepath.Join(dir, layout.ReportName))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Parameters struct {
			Measures []struct {
				ErrorScale MeasureErrorScale `json:"error_scale"`
			} `json:"measures"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if ms := rep.Parameters.Measures; len(ms) != 1 || ms[0].ErrorScale != e {
		t.Errorf("JSON report measures %+v, want the error scale %+v", ms, e)
	}
	md, err := os.ReadFile(filepath.Join(dir, layout.MarkdownName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Measures: error scale") || !strings.Contains(string(md), "| orders.amount |") ||
		!strings.Contains(string(md), fmt.Sprintf("±%.4g | %.4g |", e.TotalNoise95, e.AtomNoiseScale)) {
		t.Errorf("the Markdown report has no error-scale row for orders.amount:\n%s", md)
	}
}
