package cli

import (
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/relational"
)

// TestAnswerSelfJoinNote: the text table of multi-query SJA with
// self-joins (Alg. 2), whose rows carry no bounds, says so and why; a
// table of Alg. 1 rows, which carry bounds, does not.
func TestAnswerSelfJoinNote(t *testing.T) {
	plan := answerPlan{kind: kindMulti, name: "multi-query SJA", reason: "test"}
	bound := 3.0
	for _, c := range []struct {
		mechanism string
		bound     *float64
		want      bool
	}{
		{"multi-query SJA with self-joins (Dong–Sun–Yi Alg. 2 + QCQP, user-level DP, units a, b, d = 2)", nil, true},
		{"multi-query SJA (Dong–Sun–Yi Alg. 1, user-level DP, unit a, d = 2, r̃ = 4)", &bound, false},
	} {
		var b strings.Builder
		res := []relational.Result{{Query: "SELECT COUNT(*) FROM a, b", Value: 5, Mechanism: c.mechanism, NoiseBound95: c.bound}}
		if err := writeAnswers(&b, "text", plan, res, dp.Report{}); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(b.String(), "no NOISE ±95% or LOWER 95% is given")
		if got != c.want {
			t.Errorf("%s: note printed %v, want %v:\n%s", c.mechanism, got, c.want, b.String())
		}
	}
}
