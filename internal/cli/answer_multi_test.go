package cli

import (
	"strings"
	"testing"
)

// TestAnswerMulti answers a GROUP BY (7 ship modes) and a second query
// together with --multi: 8 integer answers, one spend of the whole budget,
// the multi-query mechanism named in every answer and in the report.
func TestAnswerMulti(t *testing.T) {
	r := mustRun(t, "answer", "--config", answerSpec, "--multi", "--query", answerQ12, "--query", answerQ3,
		"--epsilon", "4", "--delta", "1e-7", "--format", "json", "--seed", "3", "-q")
	d := decodeAnswers(t, r.stdout)
	if len(d.Answers) != 8 {
		t.Fatalf("%d answers, want 7 ship modes + 1", len(d.Answers))
	}
	for _, a := range d.Answers {
		if !strings.HasPrefix(a.Mechanism, "multi-query SJA") || a.Epsilon != 4 || a.Value == nil {
			t.Fatalf("answer %+v", a)
		}
		if _, err := a.Value.Int64(); err != nil {
			t.Fatalf("value %v is not an integer", a.Value)
		}
	}
	if len(d.Privacy.Spends) != 1 || d.Privacy.Epsilon != 4 {
		t.Fatalf("privacy %+v: want one spend of ε = 4", d.Privacy)
	}
}

// TestAnswerRanges answers three range counts on lineitem with --ranges
// under tuple-level DP: one spend, the set sensitivity in the mechanism.
func TestAnswerRanges(t *testing.T) {
	r := mustRun(t, "answer", "--config", answerSpec, "--ranges", "--unit", "",
		"--query", "SELECT COUNT(*) FROM lineitem WHERE l_quantity BETWEEN 1 AND 20",
		"--query", "SELECT COUNT(*) FROM lineitem WHERE l_quantity BETWEEN 10 AND 30 AND l_discount < 0.05",
		"--query", "SELECT COUNT(*) FROM lineitem WHERE l_quantity > 40",
		"--epsilon", "1", "--format", "json", "--seed", "4", "-q")
	d := decodeAnswers(t, r.stdout)
	if len(d.Answers) != 3 || len(d.Privacy.Spends) != 1 {
		t.Fatalf("%d answers, %d spends; want 3 and 1", len(d.Answers), len(d.Privacy.Spends))
	}
	// Add/remove neighbours (synth's): the sensitivity is the max depth.
	if !strings.Contains(d.Answers[0].Mechanism, "max depth 2, L1 sensitivity 2") {
		t.Fatalf("mechanism %q: want max depth 2 and sensitivity 2 (add/remove one tuple)", d.Answers[0].Mechanism)
	}
}

// TestAnswerMultiRangesUsage: --ranges with a unit, a disjunction under
// --ranges, and --multi with δ = 0 are usage errors (exit 2).
func TestAnswerMultiRangesUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ranges with unit", []string{"--ranges", "--query", "SELECT COUNT(*) FROM lineitem WHERE l_quantity > 3"}, "tuple-level"},
		{"ranges with OR", []string{"--ranges", "--unit", "", "--query", "SELECT COUNT(*) FROM lineitem WHERE l_quantity > 3 OR l_quantity < 2"}, "not a range-count"},
		{"multi without δ", []string{"--multi", "--delta", "0", "--query", answerQ12}, "δ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, append([]string{"answer", "-q", "--config", answerSpec}, tc.args...)...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d mentioning %q", r.code, r.stderr, ExitUsage, tc.want)
			}
		})
	}
}
