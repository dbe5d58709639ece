package cli

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/internal/tablestest"
	"github.com/synth-dp/synth/spec"
)

// TestEvaluateTables: evaluate on a release folder holding a tables
// release prints the tables' sections beside the workload's; on the true
// tables every TVD and group-query error is 0, and --format json carries
// them under "tables". With orders given random customers the fan-out
// and group rows are no longer 0, and --report shows the tables too.
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
	dir := t.TempDir()
	if err := tablestest.Write(ctx, dir, s, truth); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "-q", "evaluate", "--config", nationSpec, "--synthetic", dir, "--format", "json")
	var ev struct {
		SyntheticRows int64 `json:"synthetic_rows"`
		TrueRows      int64 `json:"true_join_rows"`
		Tables        *score.TablesScore
	}
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if ev.TrueRows == 0 || ev.SyntheticRows != ev.TrueRows {
		t.Errorf("flat join rows %d, true %d", ev.SyntheticRows, ev.TrueRows)
	}
	if ev.Tables == nil || len(ev.Tables.Tables) != 3 || len(ev.Tables.FanOuts) != 2 || ev.Tables.Groups == nil {
		t.Fatalf("tables section %+v", ev.Tables)
	}
	for _, ts := range ev.Tables.Tables {
		if ts.MaxTVD != 0 || ts.Rows != ts.TrueRows {
			t.Errorf("table %+v", ts)
		}
	}
	if g := ev.Tables.Groups; g.Mean != 0 || g.Queries != score.DefaultGroupQueries {
		t.Errorf("groups %+v", g)
	}

	tablestest.ReassignChildren(truth, "orders", rand.New(rand.NewPCG(3, 4)))
	dir = t.TempDir()
	if err := tablestest.Write(ctx, dir, s, truth); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(t.TempDir(), "report")
	txt := mustRun(t, "-q", "evaluate", "--config", nationSpec, "--synthetic", filepath.Join(dir, "synthetic.parquet"), "--report", rep).stdout
	for file, want := range map[string]string{"index.html": "Tables of the release", "summary.json": `"fan_outs"`} {
		b, err := os.ReadFile(filepath.Join(rep, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s has no %q", file, want)
		}
	}
	for _, want := range []string{"tables: every 1- and 2-way marginal", "fan-out: children per parent", "group queries (1000, seed 37"} {
		if !strings.Contains(txt, want) {
			t.Errorf("no %q in\n%s", want, txt)
		}
	}
	for _, line := range strings.Split(txt, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "customer→orders" && f[3] == "0.0000":
			t.Errorf("fan-out row still 0 with random parents: %s", line)
		case len(f) == 4 && f[0] == "all" && f[2] == "0.0000":
			t.Errorf("group queries still 0 with random parents: %s", line)
		}
	}
}
