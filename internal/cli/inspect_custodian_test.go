package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// writeCustodian writes a two-table spec with a drop column (a.color), a
// clamp column (a.age) and the given b.csv and workload, and returns its path.
//
//	a.csv: id 01, 2, 3, 4; color green is outside [red, blue] (dropped);
//	       age 200 is above 100 (clamped).
func writeCustodian(t *testing.T, bData, workload string) string {
	t.Helper()
	dir := t.TempDir()
	yaml := `privacy: {epsilon: 1, delta: 1e-6}
tables:
  - name: a
    source: a.csv
    primary_key: id
    columns:
      id: {type: key}
      color: {type: categorical, values: [red, blue], out_of_domain: drop}
      age: {type: integer, min: 0, max: 100, bins: 4, out_of_domain: clamp}
  - name: b
    source: b.csv
    columns:
      aid: {type: key}
      size: {type: categorical, values: [S, M, L]}
join: ["b.aid = a.id"]
release:
  method: join-as-one
  columns: [color, size]
` + workload
	files := map[string]string{
		"synth.yaml": yaml,
		"a.csv":      "id,color,age\n01,red,5\n2,blue,200\n3,red,30\n4,green,1\n",
		"b.csv":      bData,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "synth.yaml")
}

// TestInspectNonPrivate: inspect ends with a NON-PRIVATE section (text and
// JSON) holding the rows per table before and after the load, the rows each
// drop or clamp column removed or moved, the true join size, and warnings
// about an empty join and about join keys that write one number in two
// ways.
func TestInspectNonPrivate(t *testing.T) {
	config := writeCustodian(t, "aid,size\n1,S\n1,M\n2,L\n3,S\n3,S\n", "")
	r := mustRun(t, "-q", "inspect", "--config", config)
	r.stdout = squash(r.stdout)
	for _, want := range []string{
		"NON-PRIVATE:",
		"never publish",
		"NON-PRIVATE rows: a: 4 in the source, 3 loaded",
		"NON-PRIVATE rows: b: 5 in the source, 5 loaded",
		"NON-PRIVATE dropped: a.color: 1 rows (out_of_domain: drop)",
		"NON-PRIVATE clamped: a.age: 1 rows (out_of_domain: clamp)",
		"NON-PRIVATE join size: 3",
		"NON-PRIVATE warning: join keys look like the same numbers written differently (01 vs 1)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect text lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "the join is empty") {
		t.Errorf("warns of an empty join:\n%s", r.stdout)
	}
	// Every data statistic sits on a NON-PRIVATE line.
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "loaded") || strings.Contains(line, "join size") {
			if !strings.HasPrefix(line, "NON-PRIVATE") {
				t.Errorf("line %q is not labelled NON-PRIVATE", line)
			}
		}
	}

	j := mustRun(t, "-q", "inspect", "--config", config, "--format", "json")
	var got struct {
		NonPrivate *struct {
			Label  string `json:"label"`
			Tables []struct {
				Table      string `json:"table"`
				SourceRows int64  `json:"source_rows"`
				LoadedRows int64  `json:"loaded_rows"`
				Columns    []struct {
					Column  string `json:"column"`
					Policy  string `json:"out_of_domain"`
					Dropped int64  `json:"rows_dropped"`
					Clamped int64  `json:"rows_clamped"`
				} `json:"columns"`
			} `json:"tables"`
			JoinSize int64    `json:"join_size"`
			Warnings []string `json:"warnings"`
		} `json:"non_private"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, j.stdout)
	}
	np := got.NonPrivate
	if np == nil || !strings.HasPrefix(np.Label, "NON-PRIVATE") {
		t.Fatalf("no labelled non_private section:\n%s", j.stdout)
	}
	if np.JoinSize != 3 || len(np.Tables) != 2 || np.Tables[0].SourceRows != 4 || np.Tables[0].LoadedRows != 3 ||
		np.Tables[1].SourceRows != 5 || np.Tables[1].LoadedRows != 5 {
		t.Errorf("counts: %+v", np)
	}
	if cs := np.Tables[0].Columns; len(cs) != 2 || cs[0].Column != "color" || cs[0].Dropped != 1 || cs[1].Column != "age" || cs[1].Clamped != 1 {
		t.Errorf("column counts: %+v", cs)
	}
	// The spelling, and the types it gives the keys (a.id holds 01: text).
	// The orphans first: b.aid 1 matches no a.id (written 01), and one
	// b row's a row was dropped by out_of_domain: drop.
	if len(np.Warnings) != 3 || !strings.HasPrefix(np.Warnings[0], "orphans: b.aid → a.id: 2 of 5 rows reference no row") ||
		!strings.Contains(np.Warnings[1], "01") ||
		!strings.Contains(np.Warnings[2], "b.aid is stored as BIGINT and a.id as text") {
		t.Errorf("warnings: %q", np.Warnings)
	}
}

func TestInspectEmptyJoin(t *testing.T) {
	config := writeCustodian(t, "aid,size\n7,S\n8,M\n", "")
	r := mustRun(t, "-q", "inspect", "--config", config)
	r.stdout = squash(r.stdout)
	for _, want := range []string{"NON-PRIVATE join size: 0", "NON-PRIVATE warning: the join is empty"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect text lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestInspectEffectiveWorkload: inspect prints the families a release
// keeps accurate, not the spec's list: the default marginals of an empty
// workload, the 1-way marginals added to a listed one, and a warning for a
// released column none covers under one_way: false.
func TestInspectEffectiveWorkload(t *testing.T) {
	b := "aid,size\n1,S\n2,L\n3,S\n"
	def := squash(mustRun(t, "-q", "inspect", "--config", writeCustodian(t, b, "")).stdout)
	for _, want := range []string{
		"workload: none listed: every 1-way and 2-way marginal of the released columns (3 marginals)",
		"workload family: marginal(color)",
		"workload family: marginal(size)",
		"workload family: marginal(color,size)",
	} {
		if !strings.Contains(def, want) {
			t.Errorf("default workload: lacks %q:\n%s", want, def)
		}
	}
	if strings.Contains(def, "0 marginals") || strings.Contains(def, "\nwarning:") {
		t.Errorf("default workload:\n%s", def)
	}

	listed := squash(mustRun(t, "-q", "inspect", "--config", writeCustodian(t, b, "workload: {marginals: [[color]]}\n")).stdout)
	for _, want := range []string{
		"workload: 2 marginals (1 of them the added 1-way marginals",
		"workload family: marginal(size) (added: 1-way marginal)",
	} {
		if !strings.Contains(listed, want) {
			t.Errorf("listed workload: lacks %q:\n%s", want, listed)
		}
	}

	off := run(t, "inspect", "--config", writeCustodian(t, b, "workload: {marginals: [[color]], one_way: false}\n"), "--format", "json")
	if off.code != ExitOK {
		t.Fatalf("exit %d\n%s", off.code, off.stderr)
	}
	var got struct {
		Workload struct {
			Marginals int  `json:"marginals"`
			OneWay    bool `json:"one_way"`
		} `json:"workload"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(off.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Workload.Marginals != 1 || got.Workload.OneWay || len(got.Warnings) != 1 ||
		!strings.Contains(got.Warnings[0], "release column b.size is not covered by the workload (it will come out near uniform)") {
		t.Errorf("one_way: false: %+v", got)
	}
}

// TestInspectJoinAttributeOnce: each join equality is listed once.
func TestInspectJoinAttributeOnce(t *testing.T) {
	got := inspectLines(t, tpchSpec, "join attribute")
	want := []string{"customer.c_custkey = orders.o_custkey", "orders.o_orderkey = lineitem.l_orderkey"}
	if len(got) != len(want) {
		t.Fatalf("join attribute lines %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("join attribute %q, want %q", got[i], want[i])
		}
	}
}

// squash collapses the tabwriter's padding after each key to one space.
func squash(text string) string {
	return regexp.MustCompile(`:  +`).ReplaceAllString(text, ": ")
}
