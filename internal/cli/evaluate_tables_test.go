package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/internal/tablestest"
	"github.com/synth-dp/synth/spec"
)

// TestEvaluateTables: evaluate on a release folder holding a tables
// release (the true TPC-H tables with orders given random customers)
// scores the tables beside the workload: --format json carries them under
// "tables" (the tables' own marginals untouched at 0, the customer→orders
// fan-out and the group queries not), and --report shows them on the page
// and in summary.json.
func TestEvaluateTables(t *testing.T) {
	ctx := context.Background()
	s, err := spec.Load(nationSpec)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := score.OwnershipTree(s)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := score.TrueTables(ctx, s, tr)
	if err != nil {
		t.Fatal(err)
	}
	tablestest.ReassignChildren(truth, "orders", rand.New(rand.NewPCG(3, 4)))
	dir := t.TempDir()
	if err := tablestest.Write(ctx, dir, s, truth); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(t.TempDir(), "report")
	r := mustRun(t, "-q", "evaluate", "--config", nationSpec, "--synthetic", dir, "--format", "json", "--report", rep)
	var ev struct {
		SyntheticRows int64 `json:"synthetic_rows"`
		Tables        *score.TablesScore
	}
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if ev.Tables == nil || len(ev.Tables.Tables) != 3 || len(ev.Tables.FanOuts) != 2 || len(ev.Tables.Siblings) == 0 || ev.Tables.Groups == nil {
		t.Fatalf("tables section %+v", ev.Tables)
	}
	if ev.Tables.JoinRows != ev.SyntheticRows {
		t.Errorf("join of the tables %d rows, flat file %d", ev.Tables.JoinRows, ev.SyntheticRows)
	}
	for _, ts := range ev.Tables.Tables {
		if ts.MaxTVD != 0 || ts.Rows != ts.TrueRows {
			t.Errorf("table %+v", ts)
		}
	}
	if f := ev.Tables.FanOuts[0]; f.Child != "orders" || f.TVD < 0.1 {
		t.Errorf("fan-out with random parents %+v", f)
	}
	if g := ev.Tables.Groups; g.Mean < 0.05 || g.Queries != score.DefaultGroupQueries {
		t.Errorf("groups with random parents %+v", g)
	}
	for _, sb := range ev.Tables.Siblings {
		// Only orders moved: the line items keep their orders.
		if sb.Child == "lineitem" && (sb.Synthetic != sb.True || sb.Pairs != sb.TruePairs) {
			t.Errorf("siblings of untouched line items %+v", sb)
		}
	}
	for _, c := range [][2]string{{"index.html", "Tables of the release"}, {"index.html", "random pairs"}, {"summary.json", `"fan_outs"`}, {"summary.json", `"siblings"`}} {
		file, want := c[0], c[1]
		b, err := os.ReadFile(filepath.Join(rep, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s has no %q", file, want)
		}
	}
}

// TestWriteTablesText: the text sections, one row per table and edge, and
// the note when the flat file is not the join of the tables.
func TestWriteTablesText(t *testing.T) {
	sc := &score.TablesScore{
		Tables:       []score.TableScore{{Table: "customer", TrueRows: 10, Rows: 9, Marginals: make([]score.MarginalTVD, 3), MeanTVD: 0.01, MaxTVD: 0.02, MeanUnifTV: 0.3}},
		FanOuts:      []score.FanOutScore{{Parent: "customer", Child: "orders", TrueMean: 2, Mean: 2.5, TVD: 0.125}},
		Siblings:     []score.SiblingScore{{Parent: "customer", Child: "orders", Column: "o_orderpriority", True: 0.375, Synthetic: 0.25, TrueRandom: 0.1875}},
		Groups:       &score.GroupScore{Queries: 1000, Seed: 37, Mean: 0.25, Median: 0.0625, ZeroTrue: 300, Edges: []score.GroupEdgeScore{{Parent: "customer", Child: "orders", Queries: 1000, Mean: 0.25, Median: 0.0625}}},
		JoinRows:     40,
		TrueJoinRows: 42,
	}
	for _, c := range []struct {
		flat int64
		want []string
	}{
		{40, []string{"join of the tables: 40 rows (true 42)\n", "customer  10", "0.0100", "customer→orders  2.00", "0.1250", "customer→orders  o_orderpriority  0.375  0.250      0.188", "300 with true answer 0", "all              1000     0.2500", "0.2500", "0.0625"}},
		{41, []string{"the flat file holds 41 rows: it is not the join of the tables"}},
	} {
		var b bytes.Buffer
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		writeTablesText(tw, sc, c.flat)
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("no %q in\n%s", w, b.String())
			}
		}
	}
}
