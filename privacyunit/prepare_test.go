package privacyunit

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
)

// TestPrepareOwnership: a spec whose private tables do not all belong to
// the unit is refused before any charge, naming the table.
func TestPrepareOwnership(t *testing.T) {
	const head = `privacy: {epsilon: 1, delta: 1e-6, unit: u}
tables:
  - name: u
    source: u.csv
    primary_key: u_id
    columns: {u_id: {type: key}, u_cat: {type: categorical, values: [a, b]}}
`
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"ok", head + `  - name: o
    source: o.csv
    primary_key: o_id
    columns: {o_id: {type: key}, o_ref: {type: key}}
join: [o.o_ref = u.u_id]
release: {columns: [u_cat]}
`, ""},
		{"private table that references no unit", head + `  - name: o
    source: o.csv
    columns: {o_id: {type: key}, o_x: {type: key}}
  - name: x
    source: x.csv
    primary_key: x_id
    columns: {x_id: {type: key}, x_ref: {type: key}}
join: [o.o_x = x.x_id, x.x_ref = u.u_id, o.o_id = u.u_id]
release: {columns: [u_cat]}
`, "more than one"},
		{"join on a non-key column", head + `  - name: o
    source: o.csv
    columns: {o_id: {type: key}, o_cat: {type: categorical, values: [a]}}
  - name: p
    source: p.csv
    columns: {p_id: {type: key}}
join: [o.o_id = u.u_id, p.p_id = o.o_id]
release: {columns: [u_cat]}
`, "table p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse([]byte(tc.yaml), filepath.Join(t.TempDir(), "s.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := s.Folding()
			if err != nil {
				t.Fatal(err)
			}
			u, _ := pmw.NewUniverse([]string{"u_cat"}, []int{2}, 0)
			l, _ := dp.NewLedger(dp.Budget{Epsilon: 1, Delta: 1e-6})
			_, err = Prepare(s, f, Config{Epsilon: 1, Delta: 1e-6, Columns: spec.FoldColumns(f, s.Release.Columns), Universe: u,
				Families: []pmw.Family{pmw.Marginal([]int{0})}, Bound: 1}, l)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want == "":
				if rem := l.Remaining(); rem.Epsilon > 1e-9 {
					t.Fatalf("prepared but %v of ε left uncharged", rem.Epsilon)
				}
			case err == nil || !errors.Is(err, ErrOwnership) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %v, want ErrOwnership naming %q", err, tc.want)
			default:
				if rem := l.Remaining(); rem.Epsilon != 1 {
					t.Fatalf("refused after charging: %v of ε left", rem.Epsilon)
				}
			}
		})
	}
}

// TestPrepareL2NeedsFactored: L2 clipping on the dense model is refused
// before any charge (the dense model has no per-set measurement truth).
func TestPrepareL2NeedsFactored(t *testing.T) {
	s, f := auditSpec(t)
	u, _ := pmw.NewUniverse([]string{"o_cat"}, []int{2}, 0)
	l, _ := dp.NewLedger(dp.Budget{Epsilon: 1, Delta: 1e-6})
	_, err := Prepare(s, f, Config{Epsilon: 1, Delta: 1e-6, Columns: spec.FoldColumns(f, s.Release.Columns), Universe: u,
		Families: []pmw.Family{pmw.Marginal([]int{0})}, Bound: 1, L2: true}, l)
	if err == nil || !strings.Contains(err.Error(), "factored") {
		t.Fatalf("error %v, want a refusal naming the factored model", err)
	}
	if rem := l.Remaining(); rem.Epsilon != 1 {
		t.Fatalf("refused after charging: %v of ε left", rem.Epsilon)
	}
}

// TestKeyChecks: the keys a unit release needs unique are the unit's and
// every private parent's on an ownership path (orders, which line items
// reference), not a leaf's (line items) nor a public table's, whatever
// the order of the tables in the spec.
func TestKeyChecks(t *testing.T) {
	y := `privacy: {epsilon: 1, delta: 1e-6, unit: u}
tables:
  - name: l
    source: l.csv
    primary_key: l_id
    columns: {l_id: {type: key}, l_ord: {type: key}, l_nat: {type: key}}
  - name: n
    source: n.csv
    public: true
    primary_key: n_id
    columns: {n_id: {type: key}}
  - name: o
    source: o.csv
    primary_key: o_id
    columns: {o_id: {type: key}, o_ref: {type: key}}
  - name: u
    source: u.csv
    primary_key: u_id
    columns: {u_id: {type: key}, u_cat: {type: categorical, values: [a, b]}}
join: [l.l_ord = o.o_id, o.o_ref = u.u_id, l.l_nat = n.n_id]
release: {columns: [u_cat]}
`
	s, err := spec.Parse([]byte(y), filepath.Join(t.TempDir(), "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range KeyChecks(s) {
		got = append(got, c.Table+"."+strings.Join(c.Key, ","))
	}
	if want := []string{"o.o_id", "u.u_id"}; !slices.Equal(got, want) {
		t.Fatalf("KeyChecks = %v, want %v", got, want)
	}
}
