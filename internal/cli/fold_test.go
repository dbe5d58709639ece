package cli

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/joinasone"
)

const nationSpec = "../../examples/tpch/nation.yaml"

// inspectFolding is the folded_join part of inspect's JSON.
type inspectFolding struct {
	FoldedJoin *struct {
		Relations     []string `json:"relations"`
		RelationCount int      `json:"relation_count"`
		Algorithm     string   `json:"algorithm"`
		Folds         []struct {
			Public   string   `json:"public"`
			Into     string   `json:"into"`
			Relation string   `json:"relation"`
			Key      []string `json:"key"`
			On       []string `json:"on"`
			Lossless bool     `json:"lossless"`
		} `json:"folds"`
	} `json:"folded_join"`
	Relations []string `json:"relations"`
}

func inspectJSON(t *testing.T, config string) inspectFolding {
	t.Helper()
	r := mustRunShared(t, "-q", "inspect", "--config", config, "--format", "json")
	var got inspectFolding
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if got.FoldedJoin == nil {
		t.Fatalf("no folded_join in\n%s", r.stdout)
	}
	return got
}

// inspectLines returns the values of the text output's lines with key.
func inspectLines(t *testing.T, config, key string) []string {
	t.Helper()
	r := mustRunShared(t, "-q", "inspect", "--config", config)
	var out []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// unitFolded is inspect's algorithm line for the TPC-H examples, which
// declare privacy.unit customer.
const unitFolded = "not join-as-one (privacy.unit customer: the privacy-unit release)"

func TestInspectFoldsNation(t *testing.T) {
	got := inspectJSON(t, nationSpec)
	fj := got.FoldedJoin
	if !slices.Equal(got.Relations, []string{"customer", "orders", "lineitem", "nation", "region"}) {
		t.Errorf("relations = %v: the unfolded relations", got.Relations)
	}
	if !slices.Equal(fj.Relations, []string{"customer+nation+region", "orders", "lineitem"}) || fj.RelationCount != 3 {
		t.Errorf("folded relations = %v (%d)", fj.Relations, fj.RelationCount)
	}
	// The example declares privacy.unit customer: not join-as-one.
	if fj.Algorithm != unitFolded {
		t.Errorf("algorithm = %q, want %q", fj.Algorithm, unitFolded)
	}
	if len(fj.Folds) != 2 {
		t.Fatalf("folds = %+v", fj.Folds)
	}
	for i, want := range [][4]string{{"nation", "n_nationkey", "customer.c_nationkey"}, {"region", "r_regionkey", "nation.n_regionkey"}} {
		st := fj.Folds[i]
		if st.Public != want[0] || st.Into != "customer" || st.Relation != "customer+nation+region" ||
			!slices.Equal(st.Key, []string{want[1]}) || !slices.Equal(st.On, []string{want[2]}) || !st.Lossless {
			t.Errorf("fold %d = %+v, want %v into customer, lossless", i, st, want)
		}
	}

	if got, want := inspectLines(t, nationSpec, "folded join"), []string{"customer+nation+region, orders, lineitem (3 relations: " + unitFolded + ")"}; !slices.Equal(got, want) {
		t.Errorf("folded join line %q, want %q", got, want)
	}
	folds := inspectLines(t, nationSpec, "fold")
	want := []string{
		"nation into customer on customer.c_nationkey (primary key n_nationkey; a lookup: residual sensitivity unchanged)",
		"region into customer on nation.n_regionkey (primary key r_regionkey; a lookup: residual sensitivity unchanged)",
	}
	if !slices.Equal(folds, want) {
		t.Errorf("fold lines %q, want %q", folds, want)
	}
}

func TestInspectNothingToFold(t *testing.T) {
	fj := inspectJSON(t, tpchSpec).FoldedJoin
	if !slices.Equal(fj.Relations, []string{"customer", "orders", "lineitem"}) || len(fj.Folds) != 0 || fj.Folds == nil {
		t.Errorf("tpch: folded join %+v, want the three relations and an empty fold list", fj)
	}
	if got := inspectLines(t, tpchSpec, "folded join"); len(got) != 1 || !strings.HasPrefix(got[0], "nothing to fold") ||
		!strings.HasSuffix(got[0], "3 relations: "+unitFolded) {
		t.Errorf("tpch: folded join line %q", got)
	}
	if got := inspectLines(t, tpchSpec, "fold"); len(got) != 0 {
		t.Errorf("tpch: fold lines %q", got)
	}
}

// publicTiny is the tiny spec with table a public: b.aid = a.id joins on
// a's primary key, so a folds into b and one relation remains.
func publicTiny(t *testing.T, aData string) string {
	t.Helper()
	config, dir := writeTiny(t, tinyOptions{})
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "  - name: a\n", "  - name: a\n    public: true\n", 1)
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if aData != "" {
		if err := os.WriteFile(dir+"/a.csv", []byte(aData), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return config
}

func TestInspectFoldsToOneTable(t *testing.T) {
	config := publicTiny(t, "")
	fj := inspectJSON(t, config).FoldedJoin
	if !slices.Equal(fj.Relations, []string{"b+a"}) || fj.RelationCount != 1 || fj.Algorithm != string(joinasone.OneTable) {
		t.Errorf("folded join %+v, want b+a, one table", fj)
	}
	if len(fj.Folds) != 1 || fj.Folds[0].Public != "a" || fj.Folds[0].Into != "b" || !fj.Folds[0].Lossless {
		t.Errorf("folds %+v", fj.Folds)
	}
}

// TestInspectDuplicateKey: a folded public table whose key repeats is a
// data error naming the table, the column and the value.
func TestInspectDuplicateKey(t *testing.T) {
	config := publicTiny(t, "id,color\n1,red\n2,blue\n2,red\n")
	r := run(t, "inspect", "--config", config)
	if r.code != ExitRuntime {
		t.Errorf("exit %d, want %d\n%s", r.code, ExitRuntime, r.stderr)
	}
	for _, s := range []string{"public table a", "column id", `value "2"`, "2 rows"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr does not mention %q:\n%s", s, r.stderr)
		}
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q, want empty", r.stdout)
	}
}
