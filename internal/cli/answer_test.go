package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// answerSpec is the TPC-H SF 0.01 spec of synth answer's tests (customer,
// orders, lineitem with dates, prices and ship modes; privacy.unit:
// customer).
const answerSpec = "../../relational/testdata/tpch.yaml"

const (
	// answerShipSegments has 7 × 5 = 35 groups.
	answerShipSegments = "SELECT l_shipmode, c_mktsegment, COUNT(*) FROM customer c, orders o, lineitem l WHERE o.o_custkey = c.c_custkey AND l.l_orderkey = o.o_orderkey GROUP BY l_shipmode, c_mktsegment"
	answerQ12          = "SELECT l_shipmode, COUNT(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE l_commitdate < l_receiptdate GROUP BY l_shipmode"
	answerQ3           = "SELECT COUNT(*) FROM customer c, orders o, lineitem l WHERE c.c_custkey = o.o_custkey AND l.l_orderkey = o.o_orderkey AND c.c_mktsegment = 'BUILDING' AND o.o_orderdate < DATE '1995-03-15'"
)

type answerDoc struct {
	Mechanism struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"mechanism"`
	Answers []struct {
		Query        string            `json:"query"`
		Group        map[string]string `json:"group"`
		Value        *json.Number      `json:"value"`
		Mechanism    string            `json:"mechanism"`
		NoiseScale   *float64          `json:"noise_scale"`
		NoiseBound95 *float64          `json:"noise_bound_95"`
		LowerBound95 *int64            `json:"lower_bound_95"`
		Threshold    *float64          `json:"threshold"`
		Epsilon      float64           `json:"epsilon"`
	} `json:"answers"`
	Privacy struct {
		Epsilon    float64 `json:"epsilon"`
		Delta      float64 `json:"delta"`
		Neighbours string  `json:"neighbours"`
		Privacy    string  `json:"privacy"`
		Spends     []any   `json:"spends"`
		Outputs    []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"outputs"`
	} `json:"privacy"`
}

func decodeAnswers(t *testing.T, out string) answerDoc {
	t.Helper()
	var d answerDoc
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return d
}

// TestAnswerJSONTupleDP checks the JSON shape of a GROUP BY answer under
// tuple-level DP: one answer per declared ship mode (7, from the domain),
// integer values, a noise scale and an error bound, the budget split over
// the 7 answers, and the privacy report of the run.
func TestAnswerJSONTupleDP(t *testing.T) {
	r := mustRun(t, "answer", "--config", answerSpec, "--unit", "", "--query", answerQ12, "--format", "json", "--seed", "1", "-q")
	d := decodeAnswers(t, r.stdout)
	if len(d.Answers) != 7 {
		t.Fatalf("%d answers, want one per declared ship mode (7)", len(d.Answers))
	}
	var modes []string
	for _, a := range d.Answers {
		if a.Query != answerQ12 || a.Group == nil || a.Value == nil || a.NoiseBound95 == nil || a.LowerBound95 == nil || a.NoiseScale == nil {
			t.Fatalf("incomplete answer %+v", a)
		}
		if _, err := a.Value.Int64(); err != nil {
			t.Fatalf("value %v is not an integer", a.Value)
		}
		if !strings.Contains(a.Mechanism, "residual sensitivity") || *a.NoiseBound95 <= 0 {
			t.Fatalf("answer %+v", a)
		}
		if a.Epsilon != 1.0/7 {
			t.Fatalf("ε share %v, want 1/7", a.Epsilon)
		}
		modes = append(modes, a.Group["lineitem.l_shipmode"])
	}
	if want := []string{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}; !slices.Equal(modes, want) {
		t.Fatalf("groups %v, want the declared domain %v", modes, want)
	}
	if d.Privacy.Epsilon != 1 || d.Privacy.Delta != 1e-6 || len(d.Privacy.Spends) != 7 ||
		!strings.Contains(d.Privacy.Neighbours, "tuple") || d.Privacy.Privacy != "not private (seeded)" {
		t.Fatalf("privacy %+v", d.Privacy)
	}
}

// TestAnswerR2TFromSpecUnit checks that privacy.unit with --mechanism r2t
// runs R2T, that
// --epsilon replaces the budget, and that the answer of a query without
// GROUP BY has a null group.
func TestAnswerR2TFromSpecUnit(t *testing.T) {
	r := mustRun(t, "answer", "--config", answerSpec, "--query", answerQ3, "--mechanism", "r2t", "--epsilon", "4", "--r2t-base", "4", "--format", "json", "--seed", "2", "-q")
	d := decodeAnswers(t, r.stdout)
	if len(d.Answers) != 1 || d.Answers[0].Group != nil || !strings.HasPrefix(d.Answers[0].Mechanism, "R2T") {
		t.Fatalf("answers %+v", d.Answers)
	}
	if !strings.Contains(r.stdout, `"group": null`) {
		t.Fatalf("group is not null in\n%s", r.stdout)
	}
	if d.Privacy.Epsilon != 4 || !strings.Contains(d.Privacy.Neighbours, "customer") {
		t.Fatalf("privacy %+v", d.Privacy)
	}
}

// TestAnswerQueriesFileCSV reads two queries from a file (with a comment
// and a semicolon inside a string) and prints CSV.
func TestAnswerQueriesFileCSV(t *testing.T) {
	file := filepath.Join(t.TempDir(), "q.sql")
	src := "-- two queries; the second has a group\n" + answerQ3 + ";\n\n" +
		"SELECT c_mktsegment, COUNT(*) FROM customer WHERE c_mktsegment <> 'a;b' GROUP BY c_mktsegment;\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "answer", "--config", answerSpec, "--queries", file, "--unit", "customer", "--format", "csv", "--seed", "3", "-q")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "a;b") {
		// 'a;b' is not a declared market segment: a usage error naming the
		// query, which shows the file was split at the right semicolons.
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	src = strings.ReplaceAll(src, "'a;b'", "'BUILDING'")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "answer", "--config", answerSpec, "--queries", file, "--format", "csv", "--seed", "3", "-q")
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+1+5 || rows[0][0] != "query" || rows[0][5] != "noise_bound_95" || rows[0][6] != "lower_bound_95" {
		t.Fatalf("csv:\n%s", r.stdout)
	}
}

// TestAnswerText checks the text table.
func TestAnswerText(t *testing.T) {
	r := mustRun(t, "answer", "--config", answerSpec, "--unit", "", "--query", answerQ3, "--seed", "4", "-q")
	for _, want := range []string{"Q1: " + answerQ3, "NOISE ±95%", "LOWER 95%", "mechanism: residual sensitivity — no privacy unit", "padded bound + discrete Laplace", "privacy: (ε = 1, δ = 1e-06)-DP", "not private (seeded)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestAnswerUsageErrors checks that bad queries and flags exit 2, name the
// problem on stderr and print nothing on stdout.
func TestAnswerUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no query", []string{"--config", answerSpec}, []string{"--query"}},
		{"both", []string{"--config", answerSpec, "--query", answerQ3, "--queries", "x.sql"}, []string{"--queries"}},
		{"no config", []string{"--query", answerQ3}, []string{"--config"}},
		{"bad format", []string{"--config", answerSpec, "--query", answerQ3, "--format", "xml"}, []string{"--format"}},
		{"bad noise", []string{"--config", answerSpec, "--query", answerQ3, "--noise", "cauchy"}, []string{"--noise"}},
		{"bad gs", []string{"--config", answerSpec, "--query", answerQ3, "--gs", "0"}, []string{"--gs"}},
		{"bad base", []string{"--config", answerSpec, "--query", answerQ3, "--r2t-base", "3"}, []string{"--r2t-base"}},
		{"bad unit", []string{"--config", answerSpec, "--query", answerQ3, "--unit", "nation"}, []string{"--unit nation"}},
		{"bad epsilon", []string{"--config", answerSpec, "--query", answerQ3, "--epsilon", "-1"}, []string{"--epsilon"}},
		{"unsupported query", []string{"--config", answerSpec, "--query", "SELECT AVG(l_discount) FROM lineitem"}, []string{"SELECT AVG(l_discount) FROM lineitem", "aggregate AVG"}},
		{"left join", []string{"--config", answerSpec, "--query", "SELECT COUNT(*) FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey"}, []string{"LEFT JOIN"}},
		{"unknown column", []string{"--config", answerSpec, "--query", "SELECT COUNT(*) FROM orders WHERE o_clerk = 'x'"}, []string{"o_clerk"}},
		{"unit not reachable", []string{"--config", answerSpec, "--query", "SELECT COUNT(*) FROM lineitem"}, []string{"lineitem references unit customer"}},
		{"negative summand under R2T", []string{"--config", answerSpec, "--query", "SELECT SUM(l_discount - 1) FROM orders, lineitem WHERE o_orderkey = l_orderkey"}, []string{"non-negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, append([]string{"answer", "-q"}, tt.args...)...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, ExitUsage, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want empty", r.stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not mention %q", r.stderr, w)
				}
			}
		})
	}
}

// TestAnswerHelpGolden compares synth answer --help with
// testdata/help-answer.golden (regenerate with -update).
func TestAnswerHelpGolden(t *testing.T) {
	r := mustRun(t, "answer", "--help")
	golden := filepath.Join("testdata", "help-answer.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if r.stdout != string(want) {
		t.Errorf("synth answer --help differs from %s (run with -update if intended)\n%s", golden, r.stdout)
	}
	if h := mustRun(t, "help", "answer").stdout; h != r.stdout {
		t.Errorf("synth help answer differs from --help")
	}
}

func TestSplitQueries(t *testing.T) {
	got := splitQueries("SELECT 1; -- a comment; with a semicolon\nSELECT 'x;y' ;\n\n;SELECT \"a;b\"")
	want := []string{"SELECT 1", "SELECT 'x;y'", `SELECT "a;b"`}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestAnswerMechanismChoice checks which mechanism answer runs and that
// the output says which and why: under a privacy unit, one answer or
// several (groups or queries, any number, any δ) default to the clipped
// Laplace mechanism (one spend: for several, the total and the shape),
// --mechanism multi runs multi-query SJA (one spend of the whole budget),
// --mechanism r2t keeps one R2T run per answer, and no unit means the
// residual-sensitivity mechanism.
func TestAnswerMechanismChoice(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantName   string
		wantPrefix string // of every answer's mechanism
		wantSpends int
		wantReason []string
	}{
		{"group by under the spec's unit", []string{"--query", answerShipModes},
			"clipped Laplace", "clipped Laplace", 1, []string{"7 answers under privacy unit customer", "total and shape", "--mechanism multi"}},
		{"more than 10 answers", []string{"--query", answerShipSegments},
			"clipped Laplace", "clipped Laplace", 1, []string{"35 answers under privacy unit customer", "--mechanism multi or r2t"}},
		{"--mechanism multi", []string{"--mechanism", "multi", "--query", answerShipSegments},
			"multi-query SJA", "multi-query SJA", 1, []string{"--mechanism multi"}},
		{"two queries under --unit", []string{"--unit", "customer", "--query", answerQ3, "--query", "SELECT COUNT(*) FROM customer WHERE c_mktsegment = 'BUILDING'"},
			"clipped Laplace", "clipped Laplace", 1, []string{"2 answers"}},
		{"--mechanism r2t", []string{"--mechanism", "r2t", "--query", answerShipModes},
			"R2T", "R2T", 7, []string{"--mechanism r2t", "ε/7"}},
		{"one answer", []string{"--query", answerQ3},
			"clipped Laplace", "clipped Laplace", 1, []string{"one answer", "--mechanism r2t"}},
		{"one answer, --mechanism r2t", []string{"--mechanism", "r2t", "--query", answerQ3},
			"R2T", "R2T", 1, []string{"--mechanism r2t"}},
		{"--mechanism clip", []string{"--mechanism", "clip", "--query", answerShipModes},
			"clipped Laplace", "clipped Laplace", 1, []string{"--mechanism clip"}},
		{"δ = 0", []string{"--delta", "0", "--query", answerShipModes},
			"clipped Laplace", "clipped Laplace", 1, []string{"total and shape"}},
		{"δ = 0, --mechanism r2t", []string{"--delta", "0", "--mechanism", "r2t", "--query", answerShipModes},
			"R2T", "R2T", 7, []string{"--mechanism r2t"}},
		{"--multi", []string{"--multi", "--query", answerQ3},
			"multi-query SJA", "multi-query SJA", 1, []string{"--mechanism multi"}},
		{"no unit", []string{"--unit", "", "--query", answerShipModes},
			"residual sensitivity", "residual sensitivity", 7, []string{"no privacy unit", "tuple-level DP"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"answer", "--config", answerSpec, "--format", "json", "--seed", "5", "-q"}, tt.args...)
			d := decodeAnswers(t, mustRun(t, args...).stdout)
			if d.Mechanism.Name != tt.wantName {
				t.Fatalf("mechanism %q (%s), want %q", d.Mechanism.Name, d.Mechanism.Reason, tt.wantName)
			}
			for _, w := range tt.wantReason {
				if !strings.Contains(d.Mechanism.Reason, w) {
					t.Errorf("reason %q does not say %q", d.Mechanism.Reason, w)
				}
			}
			for _, a := range d.Answers {
				if !strings.HasPrefix(a.Mechanism, tt.wantPrefix) {
					t.Fatalf("answer ran %q, want %q", a.Mechanism, tt.wantPrefix)
				}
			}
			if len(d.Privacy.Spends) != tt.wantSpends {
				t.Errorf("%d spends, want %d", len(d.Privacy.Spends), tt.wantSpends)
			}
		})
	}
	// The text table says it too, above the answers.
	r := mustRun(t, "answer", "--config", answerSpec, "--query", answerShipModes, "--seed", "5", "-q")
	if !strings.HasPrefix(r.stdout, "mechanism: clipped Laplace — 7 answers under privacy unit customer") {
		t.Errorf("text output does not start with the mechanism and its reason:\n%s", r.stdout)
	}
	// --mechanism needs a unit; --multi contradicts --mechanism r2t.
	for _, args := range [][]string{
		{"--unit", "", "--mechanism", "multi"},
		{"--multi", "--mechanism", "r2t"},
		{"--mechanism", "best"},
	} {
		r := run(t, append([]string{"answer", "-q", "--config", answerSpec, "--query", answerShipModes}, args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "--mechanism") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error naming --mechanism", args, r.code, r.stderr)
		}
	}
}

// TestAnswerNeverNegative runs the issue-28 example under tuple-level DP
// (noise ≈ 220k per group on counts of ≈ 8.6k: about half the raw DP values
// are negative, and the seed's were) and checks that no value or lower
// bound is printed below 0, in JSON and CSV, and that the bound columns
// carry their new names: noise_bound_95 (noise only), lower_bound_95.
func TestAnswerNeverNegative(t *testing.T) {
	r := mustRun(t, "answer", "--config", answerSpec, "--unit", "", "--query", answerShipModes, "--format", "json", "--seed", "7", "-q")
	if strings.Contains(r.stdout, "error_bound_95") {
		t.Errorf("JSON still has error_bound_95:\n%s", r.stdout)
	}
	d := decodeAnswers(t, r.stdout)
	zeros := 0
	for _, a := range d.Answers {
		v, err := a.Value.Int64()
		if err != nil {
			t.Fatal(err)
		}
		if v < 0 || a.LowerBound95 == nil || *a.LowerBound95 < 0 || *a.LowerBound95 > v {
			t.Errorf("group %v: value %d, lower bound %v: want 0 ≤ lower ≤ value", a.Group, v, a.LowerBound95)
		}
		if v == 0 {
			zeros++
		}
	}
	if zeros == 0 {
		t.Errorf("no value was clamped at seed 7: the test no longer shows the clamp")
	}
	r = mustRun(t, "answer", "--config", answerSpec, "--unit", "", "--query", answerShipModes, "--format", "csv", "--seed", "7", "-q")
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows[1:] {
		if strings.HasPrefix(row[2], "-") || strings.HasPrefix(row[6], "-") {
			t.Errorf("negative CSV row %q", row)
		}
	}
}

// TestAnswerBooleanLiteral answers a comparison of a boolean column with
// TRUE and FALSE (DuckDB serializes the constants as "t" and "f", which
// the parser once refused) on the Retail example, under its unit, on one
// table that reaches the unit by a foreign key the query does not read
// (the load once left it out).
func TestAnswerBooleanLiteral(t *testing.T) {
	spec := filepath.Join("..", "..", "examples", "retail", "synth.yaml")
	for _, v := range []string{"true", "FALSE"} {
		r := mustRun(t, "answer", "--config", spec, "--query", "SELECT COUNT(*) FROM invoices WHERE cancelled = "+v, "--format", "json", "--seed", "1", "-q")
		d := decodeAnswers(t, r.stdout)
		if len(d.Answers) != 1 || d.Answers[0].Value == nil {
			t.Fatalf("cancelled = %s: answers %+v", v, d.Answers)
		}
	}
}

// TestAnswerLedgerPrinted checks that the privacy report of a
// post-processed run lists, beside the mechanism's values (answer_k), the
// value printed for every answer the post-processing changed
// (answer_k_post_processed), and nothing printed that the ledger lacks.
func TestAnswerLedgerPrinted(t *testing.T) {
	d := decodeAnswers(t, mustRun(t, "answer", "--config", answerSpec, "--query", answerShipSegments, "--format", "json", "--seed", "3", "-q").stdout)
	outs := map[string]float64{}
	for _, o := range d.Privacy.Outputs {
		outs[o.Name] = o.Value
	}
	changed := 0
	for k, a := range d.Answers {
		v, err := a.Value.Int64()
		if err != nil {
			t.Fatal(err)
		}
		raw, ok := outs[fmt.Sprintf("answer_%d", k)]
		if !ok {
			t.Fatalf("the ledger lacks answer_%d: %v", k, outs)
		}
		post, isPost := outs[fmt.Sprintf("answer_%d_post_processed", k)]
		switch {
		case isPost:
			changed++
			if post != float64(v) {
				t.Errorf("answer %d printed %d, ledger's post-processed value %v", k, v, post)
			}
		case raw != float64(v):
			t.Errorf("answer %d printed %d, ledger's value %v and no post-processed one", k, v, raw)
		}
	}
	if changed == 0 {
		t.Errorf("no answer was post-processed at seed 3: the test shows nothing")
	}
}
