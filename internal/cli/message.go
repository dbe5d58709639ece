package cli

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/synth-dp/synth/dp"
)

// duckLine matches the "LINE 1: SELECT …" line DuckDB adds under a SQL
// error; the next line is its caret.
var duckLine = regexp.MustCompile(`^\s*LINE [0-9]+:`)

// userMessage removes what the embedded engine adds to its errors for SQL
// developers and that means nothing to a synth user: the statement it ran
// with a caret under it ("LINE 1: …" and "^"), its advice on its own
// settings ("Possible solutions:", "Possible fixes:", "Possible
// Solution:" and their "* " bullets, "See also https://duckdb.org/…"),
// and the CSV reader's dump of its options ("  file = …", "delimiter =
// … (Set By User)"). The rest is kept in order, blank lines collapsed.
func userMessage(msg string) string {
	lines := strings.Split(msg, "\n")
	out := make([]string, 0, len(lines))
	advice := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		tl := strings.TrimSpace(l)
		switch {
		case duckLine.MatchString(l):
			if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "^" {
				i++
			}
			continue
		case tl == "^":
			continue
		case strings.HasPrefix(tl, "Possible solutions:"), strings.HasPrefix(tl, "Possible fixes:"), strings.HasPrefix(tl, "Possible Solution:"):
			advice = true
			continue
		case advice && (strings.HasPrefix(tl, "* ") || tl == ""):
			continue
		case strings.HasPrefix(tl, "See also https://duckdb.org"):
			continue
		case i > 0 && duckOption.MatchString(l):
			continue
		}
		advice = false
		if tl == "" && (len(out) == 0 || strings.TrimSpace(out[len(out)-1]) == "") {
			continue
		}
		out = append(out, strings.TrimRight(l, " \t"))
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n")
}

// duckOption matches a line of DuckDB's CSV reader option dump.
var duckOption = regexp.MustCompile(`^\s+[a-z_]+ = .*$`)

// budgetMessage explains, in a user's terms, an error whose cause is a
// noise scale outside the exact samplers' range ([dp.ScaleError]), and
// returns "" for any other error or one already explained (the
// preflight's "is too small for this release"). The sampler's own text
// follows, for reference.
func budgetMessage(err error) string {
	var se *dp.ScaleError
	if !errors.As(err, &se) || strings.Contains(err.Error(), "is too small for this release") {
		return ""
	}
	if !se.TooMuchNoise() {
		return fmt.Sprintf("the privacy budget is too large for the exact noise samplers: the noise this release needs (a scale of %.3g) is finer than they draw (at least %g); lower ε (detail: %v)",
			se.Scale, dp.MinDiscreteScale, err)
	}
	size := "overflows (is infinite)"
	if !math.IsInf(se.Scale, 1) {
		size = fmt.Sprintf("is about ±%.2g", se.Scale)
	}
	return fmt.Sprintf("the privacy budget ε is too small for this release: the noise it needs on a single count %s, "+
		"more than synth's exact samplers draw (at most %.3g) and more than any data could outweigh, so nothing would come out but noise; "+
		"raise privacy.epsilon (or --epsilon); nothing was published (detail: %v)", size, float64(dp.MaxDiscreteScale), err)
}
