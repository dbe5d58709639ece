package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// TestModeOracle checks AddMode's per-parent most frequent child bin (the
// smallest on a tie, 0 without children) against a Go count, on 15 random
// parent ← child instances (30 with SYNTH_SLOW_AUDITS, as .ci/run sets it;
// a fresh seed each run) with children referencing missing parents, NULL
// foreign keys and many ties (three values, few children).
func TestModeOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(stattest.Seed(t), 41))
	ctx := context.Background()
	values := []string{"x", "y", "z"}
	n := 15
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		n = 30
	}
	for inst := range n {
		dir := t.TempDir()
		na, nb := 1+r.IntN(12), r.IntN(40)
		var arows, brows [][]string
		for a := range na {
			arows = append(arows, []string{strconv.Itoa(a)})
		}
		counts := make([][3]int, na)
		for b := range nb {
			a, v := r.IntN(na+2), r.IntN(3)
			fk := strconv.Itoa(a)
			if a == na+1 {
				fk = "" // NULL
			} else if a < na {
				counts[a][v]++
			}
			brows = append(brows, []string{strconv.Itoa(b), fk, values[v]})
		}
		s := &spec.Spec{
			Privacy: spec.Privacy{Epsilon: 1, Delta: 1e-6},
			Tables: []spec.Table{
				{Name: "a", Source: writeCSV(t, dir, "a.csv", []string{"a_id"}, arows), Format: "csv", PrimaryKey: []string{"a_id"}, Columns: []spec.Column{{Name: "a_id", Type: spec.Key}}},
				{Name: "b", Source: writeCSV(t, dir, "b.csv", []string{"b_id", "b_a", "b_c"}, brows), Format: "csv", PrimaryKey: []string{"b_id"},
					Columns: []spec.Column{{Name: "b_id", Type: spec.Key}, {Name: "b_a", Type: spec.Key}, {Name: "b_c", Type: spec.Categorical, Values: values}}},
			},
			Join: []spec.JoinEq{{Left: spec.ColumnRef{Table: "b", Column: "b_a"}, Right: spec.ColumnRef{Table: "a", Column: "a_id"}}},
		}
		e := openTest(t)
		if err := e.Load(ctx, s); err != nil {
			t.Fatalf("instance %d: %v", inst, err)
		}
		if err := e.AddMode(ctx, Hop{Parent: "a", PK: "a_id", Child: "b", FK: "b_a"}, "mode_b", "b_c", 3); err != nil {
			t.Fatal(err)
		}
		rows, err := e.db.QueryContext(ctx, fmt.Sprintf(`SELECT CAST(a_id AS VARCHAR), %s FROM a`, BinColumn("mode_b")))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for rows.Next() {
			var k string
			var m int
			if err := rows.Scan(&k, &m); err != nil {
				t.Fatal(err)
			}
			got[k] = m
		}
		rows.Close()
		if len(got) != na {
			t.Fatalf("instance %d: %d rows of a after AddMode, want %d", inst, len(got), na)
		}
		for a := range na {
			want := 0
			for v := 1; v < 3; v++ {
				if counts[a][v] > counts[a][want] {
					want = v
				}
			}
			if g := got[strconv.Itoa(a)]; g != want {
				t.Fatalf("instance %d: parent %d with children %v: mode bin %d, want %d", inst, a, counts[a], g, want)
			}
		}
		if n, ok := e.declaredSize("a", "mode_b"); !ok || n != 3 {
			t.Fatalf("instance %d: declared size %d, %v", inst, n, ok)
		}
	}
}
