package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/synth-dp/synth/spec"
)

// SpecName is the spec file [WriteFiles] writes beside the data.
const SpecName = "synth.yaml"

// WriteFiles writes the demo instance for k into dir the way a custodian
// keeps a dataset: customers.csv, transactions.csv and synth.yaml, the spec
// [Write] returns with budget (eps, delta), naming the data files relative
// to itself. The data depend on k only, so `synth evaluate --config
// DIR/synth.yaml` reads the very data `synth demo --k k` released. It
// returns the spec's path.
func WriteFiles(dir string, k int, eps, delta float64) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	s, err := Write(dir, k, eps, delta)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, SpecName)
	if err := os.WriteFile(path, SpecYAML(s), 0o644); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	return path, nil
}

// SpecYAML renders the demo's spec as YAML, each table's source as its
// file name (the spec sits beside the data). It covers what [Write]'s spec
// uses — categorical and binned integer columns, keys, primary keys, one
// join, the release and workload marginals — not every spec feature.
func SpecYAML(s *spec.Spec) []byte {
	var b strings.Builder
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	list := func(v []string) string {
		q := make([]string, len(v))
		for i, x := range v {
			q[i] = strconv.Quote(x)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	refs := func(r []spec.ColumnRef) string {
		v := make([]string, len(r))
		for i, c := range r {
			v[i] = c.Table + "." + c.Column
		}
		return list(v)
	}
	fmt.Fprintf(&b, "# The demo instance: customers and their transactions (written by internal/demo).\n")
	unit := ""
	if s.Privacy.Unit != "" {
		unit = ", unit: " + s.Privacy.Unit
	}
	fmt.Fprintf(&b, "privacy: {epsilon: %s, delta: %s%s}\ntables:\n", num(s.Privacy.Epsilon), num(s.Privacy.Delta), unit)
	for _, t := range s.Tables {
		fmt.Fprintf(&b, "  - name: %s\n    source: %s\n", t.Name, filepath.Base(t.Source))
		if len(t.PrimaryKey) > 0 {
			fmt.Fprintf(&b, "    primary_key: %s\n", list(t.PrimaryKey))
		}
		fmt.Fprintf(&b, "    columns:\n")
		for _, c := range t.Columns {
			fields := []string{"type: " + string(c.Type)}
			switch c.Type {
			case spec.Categorical:
				fields = append(fields, "values: "+list(c.Values))
			case spec.Integer, spec.Numeric:
				fields = append(fields, "min: "+num(c.Min), "max: "+num(c.Max))
				if c.Bins > 0 {
					fields = append(fields, "bins: "+strconv.Itoa(c.Bins))
				}
			}
			if c.OutOfDomain != "" && c.Type != spec.Key {
				fields = append(fields, "out_of_domain: "+string(c.OutOfDomain))
			}
			fmt.Fprintf(&b, "      %s: {%s}\n", c.Name, strings.Join(fields, ", "))
		}
	}
	var joins []string
	for _, j := range s.Join {
		joins = append(joins, j.Left.Table+"."+j.Left.Column+" = "+j.Right.Table+"."+j.Right.Column)
	}
	fmt.Fprintf(&b, "join: %s\n", list(joins))
	fmt.Fprintf(&b, "release:\n")
	if s.Release.Method != "" {
		fmt.Fprintf(&b, "  method: %s\n", s.Release.Method)
	}
	fmt.Fprintf(&b, "  columns: %s\n", refs(s.Release.Columns))
	if len(s.Workload.Marginals) > 0 {
		fmt.Fprintf(&b, "workload:\n  marginals:\n")
		for _, m := range s.Workload.Marginals {
			fmt.Fprintf(&b, "    - %s\n", refs(m))
		}
	}
	return []byte(b.String())
}
