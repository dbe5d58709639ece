package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestHiddenOffTerminal: a writer that is not a terminal (a buffer, a
// regular file) gets nothing, whatever is reported.
func TestHiddenOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, r := range []*Reporter{New(&buf, false), New(f, false), New(os.Stderr, true)} {
		if r.Visible() {
			t.Fatalf("reporter on %T is visible", r.w)
		}
		r.Update("loading tables", 0, 1)
		r.Update("PMW rounds", 3, 10)
		r.Done()
	}
	if buf.Len() != 0 {
		t.Errorf("buffer got %q", buf.String())
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 0 {
		t.Errorf("file got %d bytes (%v)", fi.Size(), err)
	}
	var nilR *Reporter
	nilR.Update("x", 1, 2) // must not panic
	nilR.Done()
}

// TestVisibleDraws: a visible reporter draws each phase's description and
// count, and a phase starting over gets a fresh bar.
func TestVisibleDraws(t *testing.T) {
	var buf bytes.Buffer
	r := newReporter(&buf, true)
	r.Update("PMW rounds", 1, 10)
	r.Update("PMW rounds", 10, 10)
	r.Update("PMW rounds", 1, 10) // the next bucket
	if r.last != 1 || r.total != 10 {
		t.Errorf("after a restart: last %d, total %d", r.last, r.total)
	}
	r.Update("writing rows", 5, -1)
	r.Done()
	out := buf.String()
	for _, want := range []string{"PMW rounds", "(1/10)", "writing rows"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
}

// TestTotalRefined: a phase whose known total changes (PMW's adaptive
// rounds: the plan shrinks as the budget anneals) keeps its bar and ends
// at the new total; a phase starting over, or a new phase, gets a new bar.
func TestTotalRefined(t *testing.T) {
	var buf bytes.Buffer
	r := newReporter(&buf, true)
	r.Update("PMW rounds", 1, 12)
	first := r.bar
	r.Update("PMW rounds", 2, 9)
	r.Update("PMW rounds", 7, 7)
	if r.bar != first || r.total != 7 || r.last != 7 {
		t.Errorf("refined total: same bar %v, total %d, last %d", r.bar == first, r.total, r.last)
	}
	if got := r.bar.GetMax64(); got != 7 {
		t.Errorf("bar max %d, want 7", got)
	}
	r.Update("PMW rounds", 1, 9) // the next sub-instance
	if r.bar == first {
		t.Error("a phase starting over kept its bar")
	}
	r.Done()
}
