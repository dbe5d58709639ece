package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnswerLoadsWhatItReads: answer loads and checks only the tables and
// columns its queries name. With a category missing from the declaration
// of c_mktsegment (so that customer.csv holds values outside the domain),
// a query that does not read the column answers, and one that reads it
// fails as a whole load fails, naming the file, column and value.
func TestAnswerLoadsWhatItReads(t *testing.T) {
	b, err := os.ReadFile(answerSpec)
	if err != nil {
		t.Fatal(err)
	}
	data, err := filepath.Abs("../../testdata/tpch")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "../../testdata/tpch", data)
	text = strings.Replace(text, "HOUSEHOLD, MACHINERY]", "HOUSEHOLD]", 1)
	spec := filepath.Join(t.TempDir(), "tpch.yaml")
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT COUNT(*) FROM customer",
		"SELECT COUNT(*) FROM customer, orders WHERE c_custkey = o_custkey AND o_orderpriority = '1-URGENT'",
	} {
		mustRun(t, "answer", "--config", spec, "--unit", "", "--query", q, "--seed", "1", "-q")
	}
	r := run(t, "answer", "--config", spec, "--unit", "", "--query", "SELECT COUNT(*) FROM customer WHERE c_mktsegment = 'BUILDING'", "--seed", "1", "-q")
	if r.code != ExitRuntime || !strings.Contains(r.stderr, "customer.csv") || !strings.Contains(r.stderr, "column c_mktsegment") || !strings.Contains(r.stderr, `"MACHINERY"`) {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit %d naming customer.csv, column c_mktsegment and value MACHINERY", r.code, r.stderr, ExitRuntime)
	}
}
