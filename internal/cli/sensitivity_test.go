package cli

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/synth-dp/synth/spec"
)

type sensitivityJSON struct {
	Label            string             `json:"label"`
	Beta             *float64           `json:"beta"`
	RS               *float64           `json:"rs"`
	LocalSensitivity *float64           `json:"local_sensitivity"`
	TE               map[string]float64 `json:"t_e"`
}

func runSensitivity(t *testing.T, args ...string) (sensitivityJSON, result) {
	t.Helper()
	r := mustRun(t, append([]string{"-q", "sensitivity", "--format", "json"}, args...)...)
	var got sensitivityJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if got.Beta == nil || got.RS == nil || got.LocalSensitivity == nil || got.TE == nil {
		t.Fatalf("missing keys beta, rs, local_sensitivity or t_e:\n%s", r.stdout)
	}
	if !strings.HasPrefix(got.Label, "NON-PRIVATE") {
		t.Errorf("JSON label %q does not say NON-PRIVATE", got.Label)
	}
	if !strings.Contains(r.stderr, "NON-PRIVATE") {
		t.Errorf("stderr does not say NON-PRIVATE:\n%s", r.stderr)
	}
	return got, r
}

// properSubsets names the nonempty proper subsets of names: each subset's
// names sorted and joined by commas.
func properSubsets(names []string) []string {
	var out []string
	for mask := 1; mask < 1<<len(names)-1; mask++ {
		var sub []string
		for i, n := range names {
			if mask&(1<<i) != 0 {
				sub = append(sub, n)
			}
		}
		sort.Strings(sub)
		out = append(out, strings.Join(sub, ","))
	}
	sort.Strings(out)
	return out
}

func TestSensitivity(t *testing.T) {
	s, err := spec.Load(tpchSpec)
	if err != nil {
		t.Fatal(err)
	}
	relations := make([]string, len(s.Tables))
	for i, tb := range s.Tables {
		relations[i] = tb.Name
	}
	wantKeys := properSubsets(relations)
	if len(wantKeys) != 6 {
		t.Fatalf("%d proper subsets of %v, want 6", len(wantKeys), relations)
	}
	def, _ := runSensitivity(t, "--config", tpchSpec)
	large, _ := runSensitivity(t, "--config", tpchSpec, "--beta", "10")

	tests := []struct {
		name     string
		got      sensitivityJSON
		wantBeta float64
	}{
		{"default beta", def, s.Privacy.Epsilon / math.Log(1/s.Privacy.Delta)},
		{"beta 10", large, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if math.Abs(*tt.got.Beta-tt.wantBeta) > 1e-12*tt.wantBeta {
				t.Errorf("beta = %v, want %v", *tt.got.Beta, tt.wantBeta)
			}
			keys := make([]string, 0, len(tt.got.TE))
			for k, v := range tt.got.TE {
				keys = append(keys, k)
				if !(v >= 0) || math.IsInf(v, 0) {
					t.Errorf("T_{%s} = %v, want finite ≥ 0", k, v)
				}
			}
			sort.Strings(keys)
			if !slices.Equal(keys, wantKeys) {
				t.Errorf("t_e keys = %q, want %q", keys, wantKeys)
			}
			// RS^β = max_k e^{−βk}·LŜ^k includes k = 0.
			if !(*tt.got.LocalSensitivity > 0) || *tt.got.RS < *tt.got.LocalSensitivity {
				t.Errorf("rs = %v, local_sensitivity = %v: want rs ≥ local_sensitivity > 0", *tt.got.RS, *tt.got.LocalSensitivity)
			}
		})
	}
	// RS^β is nonincreasing in β, and for a large β the k = 0 term wins.
	if *large.RS > *def.RS {
		t.Errorf("rs at beta 10 = %v > rs at beta %v = %v", *large.RS, *def.Beta, *def.RS)
	}
	if *large.RS != *large.LocalSensitivity {
		t.Errorf("rs at beta 10 = %v, want local_sensitivity %v", *large.RS, *large.LocalSensitivity)
	}
	if *large.LocalSensitivity != *def.LocalSensitivity {
		t.Errorf("local_sensitivity depends on beta: %v vs %v", *large.LocalSensitivity, *def.LocalSensitivity)
	}
}

func TestSensitivityText(t *testing.T) {
	r := mustRun(t, "-q", "sensitivity", "--config", tpchSpec)
	if !strings.HasPrefix(r.stdout, "NON-PRIVATE") {
		t.Errorf("text output does not start with NON-PRIVATE:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "NON-PRIVATE") {
		t.Errorf("stderr does not say NON-PRIVATE:\n%s", r.stderr)
	}
	for _, k := range properSubsets([]string{"customer", "orders", "lineitem"}) {
		if !strings.Contains(r.stdout, "T_{"+k+"}:") {
			t.Errorf("text output has no T_{%s}:\n%s", k, r.stdout)
		}
	}
}
