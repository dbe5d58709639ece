// Package progress draws the CLI's progress bars (loading, partitions, PMW
// rounds, writing, rendering) with github.com/schollz/progressbar/v3.
//
// Bars go to stderr and only when stderr is a terminal: a log file, a pipe
// or a test's buffer gets nothing, so scripted runs keep clean output.
// One bar is drawn at a time; a new phase finishes the previous one.
//
// A Reporter is safe for concurrent use.
package progress

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Reporter draws one progress bar at a time.
type Reporter struct {
	w       io.Writer
	visible bool

	mu    sync.Mutex
	phase string
	total int64
	last  int64
	bar   *progressbar.ProgressBar
}

// New returns a Reporter drawing on w when w is a terminal (an *os.File
// that [term.IsTerminal] accepts) and quiet is false; otherwise it draws
// nothing.
func New(w io.Writer, quiet bool) *Reporter {
	visible := false
	if f, ok := w.(*os.File); ok && !quiet {
		visible = term.IsTerminal(int(f.Fd()))
	}
	return newReporter(w, visible)
}

func newReporter(w io.Writer, visible bool) *Reporter {
	return &Reporter{w: w, visible: visible}
}

// Visible reports whether the Reporter draws anything.
func (r *Reporter) Visible() bool { return r != nil && r.visible }

// Update moves the bar of phase to done of total; total < 0 means unknown
// (a spinner with a count). A phase other than the current one, or the
// current one starting over (done going back, as PMW's rounds do in every
// bucket of the uniformized method), finishes the current bar and starts a
// new one. A known total that changes (an adaptive plan refined as it
// runs, such as PMW's rounds) moves the current bar's end instead. A nil
// or invisible Reporter does nothing.
func (r *Reporter) Update(phase string, done, total int64) {
	if !r.Visible() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil && phase == r.phase && done >= r.last && total != r.total && total >= 0 && r.total >= 0 {
		r.bar.ChangeMax64(total)
		r.total = total
	}
	if r.bar == nil || phase != r.phase || total != r.total || done < r.last {
		r.finish()
		max := total
		if max < 0 {
			max = -1
		}
		r.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(r.w),
			progressbar.OptionSetVisibility(r.visible),
			progressbar.OptionSetDescription(phase),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		r.phase, r.total = phase, total
	}
	r.last = done
	_ = r.bar.Set64(done) // a bar's write error must not stop the work
}

// Done finishes and clears the current bar, if any.
func (r *Reporter) Done() {
	if !r.Visible() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finish()
}

func (r *Reporter) finish() {
	if r.bar != nil {
		_ = r.bar.Finish()
		_ = r.bar.Clear()
		r.bar = nil
	}
	r.phase, r.total, r.last = "", 0, 0
}
