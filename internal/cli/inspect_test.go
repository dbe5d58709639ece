package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// universeSize computes the product of the released columns' sizes from
// the spec's tables, without Spec.UniverseSize or Spec.ReleaseColumns.
func universeSize(t *testing.T, path string) int64 {
	t.Helper()
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(1)
	for _, ref := range s.Release.Columns {
		size := 0
		for _, tb := range s.Tables {
			for i := range tb.Columns {
				if tb.Name == ref.Table && tb.Columns[i].Name == ref.Column {
					size = tb.Columns[i].Size()
				}
			}
		}
		if size == 0 {
			t.Fatalf("%s: released column %s not found", path, ref)
		}
		n *= int64(size)
	}
	return n
}

func TestInspect(t *testing.T) {
	tests := []struct {
		name         string
		config       string
		relations    []string
		universe     int64 // documented in the example's comments; 0: not documented
		acyclic      bool
		hierarchical bool
	}{
		{"tpch", tpchSpec, []string{"customer", "orders", "lineitem"}, 0, true, false},
		{"adult", adultSpec, []string{"adult"}, 1_612_800, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/json", func(t *testing.T) {
			r := mustRunShared(t, "-q", "inspect", "--config", tt.config, "--format", "json")
			var got struct {
				Relations          []string `json:"relations"`
				UniverseSize       *int64   `json:"universe_size"`
				Acyclic            *bool    `json:"acyclic"`
				Hierarchical       *bool    `json:"hierarchical"`
				HierarchicalReason string   `json:"hierarchical_reason"`
				DataValidated      bool     `json:"data_validated"`
				ReleaseColumns     []struct {
					Name string `json:"name"`
					Size int    `json:"size"`
				} `json:"release_columns"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			if !slices.Equal(got.Relations, tt.relations) {
				t.Errorf("relations = %q, want %q", got.Relations, tt.relations)
			}
			want := universeSize(t, tt.config)
			if tt.universe != 0 && want != tt.universe {
				t.Fatalf("the spec's universe is %d, its comment says %d", want, tt.universe)
			}
			if got.UniverseSize == nil || *got.UniverseSize != want {
				t.Errorf("universe_size = %v, want %d", got.UniverseSize, want)
			}
			product := int64(1)
			for _, c := range got.ReleaseColumns {
				product *= int64(c.Size)
			}
			if product != want {
				t.Errorf("release_columns sizes %+v multiply to %d, want %d", got.ReleaseColumns, product, want)
			}
			if got.Acyclic == nil || *got.Acyclic != tt.acyclic {
				t.Errorf("acyclic = %v, want %v", got.Acyclic, tt.acyclic)
			}
			if got.Hierarchical == nil || *got.Hierarchical != tt.hierarchical {
				t.Errorf("hierarchical = %v, want %v", got.Hierarchical, tt.hierarchical)
			}
			if (got.HierarchicalReason == "") != tt.hierarchical {
				t.Errorf("hierarchical_reason = %q with hierarchical %v", got.HierarchicalReason, tt.hierarchical)
			}
			if !got.DataValidated {
				t.Errorf("data_validated = false after a successful inspect")
			}
		})
		t.Run(tt.name+"/text", func(t *testing.T) {
			r := mustRunShared(t, "-q", "inspect", "--config", tt.config)
			fields := map[string]string{}
			for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					t.Fatalf("line %q has no key", line)
				}
				fields[k] = strings.TrimSpace(v)
			}
			if got, want := fields["relations"], strings.Join(tt.relations, ", "); got != want {
				t.Errorf("relations: %q, want %q", got, want)
			}
			if got, want := fields["acyclic"], fmt.Sprint(tt.acyclic); got != want {
				t.Errorf("acyclic: %q, want %q", got, want)
			}
			if got, want := fields["hierarchical"], fmt.Sprint(tt.hierarchical); !strings.HasPrefix(got, want) {
				t.Errorf("hierarchical: %q, want %q", got, want)
			}
			if got, want := fields["universe size"], fmt.Sprint(universeSize(t, tt.config)); got != want {
				t.Errorf("universe size: %q, want %q", got, want)
			}
			if r.stderr != "" {
				t.Errorf("stderr under -q = %q, want empty", r.stderr)
			}
		})
	}
}

// TestLogLevel checks that --log-level and -q select what reaches stderr.
func TestLogLevel(t *testing.T) {
	config, _ := writeTiny(t, tinyOptions{})
	tests := []struct {
		flags    []string
		wantInfo bool
	}{
		{nil, true},
		{[]string{"--log-level", "debug"}, true},
		{[]string{"--log-level", "warn"}, false},
		{[]string{"-q"}, false},
		{[]string{"--log-level", "debug", "--quiet"}, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.flags, " "), func(t *testing.T) {
			args := append(slices.Clone(tt.flags), "inspect", "--config", config)
			r := mustRun(t, args...)
			if got := strings.Contains(r.stderr, "level=INFO"); got != tt.wantInfo {
				t.Errorf("info logs on stderr: %v, want %v\nstderr:\n%s", got, tt.wantInfo, r.stderr)
			}
			if strings.Contains(r.stdout, "level=") {
				t.Errorf("logs on stdout:\n%s", r.stdout)
			}
		})
	}
}
