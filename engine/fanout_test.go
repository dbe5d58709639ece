package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// TestFanoutOracle checks AddFanout's binned per-parent child counts and
// UnitMaxFanout's per-unit largest fan-out against a Go count of random
// chains u ← a ← b (children referencing missing parents, NULL foreign
// keys, parents without children; keys stored as text on one side of an
// edge in half the instances), on 20 instances with a fresh seed each run
// (40 with SYNTH_SLOW_AUDITS, as .ci/run sets it; each instance costs some
// 120 ms of CPU, nearly all in DuckDB).
func TestFanoutOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(stattest.Seed(t), 37))
	ctx := context.Background()
	lows := []int64{0, 1, 2, 4, 7}
	bin := func(n int64) int64 {
		b := int64(0)
		for i, l := range lows {
			if n >= l {
				b = int64(i)
			}
		}
		return b
	}
	n := 20
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		n = 40
	}
	for inst := range n {
		dir := t.TempDir()
		nu, na, nb := 1+r.IntN(6), r.IntN(15), r.IntN(40)
		prefix := ""
		if inst%2 == 1 {
			prefix = "k" // a's keys are text, so a ⋈ b compares as text
		}
		var urows, arows, brows [][]string
		for u := range nu {
			urows = append(urows, []string{strconv.Itoa(u)})
		}
		aOwner := make([]int, na) // a row → its unit (−1: none)
		for a := range na {
			u := r.IntN(nu + 1) // nu: a unit that does not exist
			aOwner[a] = u
			urows := strconv.Itoa(u)
			arows = append(arows, []string{prefix + strconv.Itoa(a), urows})
		}
		aKids := make([]int64, na)
		for b := range nb {
			a := r.IntN(na + 2)
			fk := prefix + strconv.Itoa(a)
			if a == na+1 {
				fk = "" // NULL
			} else if a < na {
				aKids[a]++
			}
			brows = append(brows, []string{strconv.Itoa(b), fk})
		}
		s := &spec.Spec{
			Privacy: spec.Privacy{Epsilon: 1, Delta: 1e-6, Unit: "u"},
			Tables: []spec.Table{
				{Name: "u", Source: writeCSV(t, dir, "u.csv", []string{"u_id"}, urows), Format: "csv", PrimaryKey: []string{"u_id"}, Columns: []spec.Column{{Name: "u_id", Type: spec.Key}}},
				{Name: "a", Source: writeCSV(t, dir, "a.csv", []string{"a_id", "a_u"}, arows), Format: "csv", PrimaryKey: []string{"a_id"}, Columns: []spec.Column{{Name: "a_id", Type: spec.Key}, {Name: "a_u", Type: spec.Key}}},
				{Name: "b", Source: writeCSV(t, dir, "b.csv", []string{"b_id", "b_a"}, brows), Format: "csv", PrimaryKey: []string{"b_id"}, Columns: []spec.Column{{Name: "b_id", Type: spec.Key}, {Name: "b_a", Type: spec.Key}}},
			},
			Join: []spec.JoinEq{{Left: spec.ColumnRef{Table: "a", Column: "a_u"}, Right: spec.ColumnRef{Table: "u", Column: "u_id"}}, {Left: spec.ColumnRef{Table: "b", Column: "b_a"}, Right: spec.ColumnRef{Table: "a", Column: "a_id"}}},
		}
		e := openTest(t)
		if err := e.Load(ctx, s); err != nil {
			t.Fatalf("instance %d: %v", inst, err)
		}
		hb := Hop{Parent: "a", PK: "a_id", Child: "b", FK: "b_a"}
		if err := e.AddFanout(ctx, hb, FanoutColumn{Name: "fan_b", Lows: lows}, FanoutColumn{Name: "fan_b_exact", Lows: []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}); err != nil {
			t.Fatal(err)
		}
		rows, err := e.db.QueryContext(ctx, fmt.Sprintf(`SELECT CAST(a_id AS VARCHAR), %s, %s FROM a`, BinColumn("fan_b"), BinColumn("fan_b_exact")))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][2]int64{}
		for rows.Next() {
			var k string
			var f, x int64
			if err := rows.Scan(&k, &f, &x); err != nil {
				t.Fatal(err)
			}
			got[k] = [2]int64{f, x}
		}
		rows.Close()
		if len(got) != na {
			t.Fatalf("instance %d: %d rows of a after AddFanout, want %d", inst, len(got), na)
		}
		for a := range na {
			g := got[prefix+strconv.Itoa(a)]
			if g[0] != bin(aKids[a]) || g[1] != min(aKids[a], 12) {
				t.Fatalf("instance %d: a row %d has %d children: bins %v, want [%d %d]", inst, a, aKids[a], g, bin(aKids[a]), min(aKids[a], 12))
			}
		}
		if n, ok := e.declaredSize("a", "fan_b"); !ok || n != len(lows) {
			t.Fatalf("instance %d: declared size %d, %v", inst, n, ok)
		}
		// Largest fan-out per unit, units counted by it.
		want := map[int64]int64{}
		for u := range nu {
			var m int64
			for a := range na {
				if aOwner[a] == u {
					m = max(m, aKids[a])
				}
			}
			want[m]++
		}
		gotMax := map[int64]int64{}
		if err := e.UnitMaxFanout(ctx, "u_id", []Hop{{Parent: "u", PK: "u_id", Child: "a", FK: "a_u"}, hb}, func(f, u int64) error {
			gotMax[f] += u
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sortedPairs(gotMax)) != fmt.Sprint(sortedPairs(want)) {
			t.Fatalf("instance %d: units by largest fan-out %v, want %v", inst, sortedPairs(gotMax), sortedPairs(want))
		}
		// The unit's own edge: children per unit.
		wantU := map[int64]int64{}
		for u := range nu {
			var n int64
			for a := range na {
				if aOwner[a] == u {
					n++
				}
			}
			wantU[n]++
		}
		gotU := map[int64]int64{}
		if err := e.UnitMaxFanout(ctx, "u_id", []Hop{{Parent: "u", PK: "u_id", Child: "a", FK: "a_u"}}, func(f, u int64) error {
			gotU[f] += u
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sortedPairs(gotU)) != fmt.Sprint(sortedPairs(wantU)) {
			t.Fatalf("instance %d: units by children %v, want %v", inst, sortedPairs(gotU), sortedPairs(wantU))
		}
	}
}

func sortedPairs(m map[int64]int64) [][2]int64 {
	var out [][2]int64
	for k, v := range m {
		out = append(out, [2]int64{k, v})
	}
	slices.SortFunc(out, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	return out
}
