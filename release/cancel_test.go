package release

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/synthfile"
)

// TestReleaseCancelEachStage cancels a release from its own progress
// callback at the start of each stage (no timing: the cancellation lands
// where the run is) and checks that the run returns context.Canceled
// without starting a later stage, writes at most one writer batch of rows
// after a cancellation in the write stage (synthfile.BatchRows: the writer
// checks its context once a batch), and leaves no output folder. A stage
// that ignored its context would run the next one (or, writing, every
// row) before the final check reported the cancellation.
func TestReleaseCancelEachStage(t *testing.T) {
	s := demoSpec(t, 16)
	const rows = 400_000
	order := []Phase{PhaseLoad, PhasePMW, PhaseDraw, PhaseWrite}
	for _, at := range order {
		ctx, cancel := context.WithCancel(context.Background())
		var cancelled bool
		var late []Phase // stages started after the cancellation
		var cancelRows, lastRows int64
		progress := func(p Phase, done, total int64) {
			if cancelled && slices.Index(order, p) > slices.Index(order, at) && !slices.Contains(late, p) {
				late = append(late, p)
			}
			if p == PhaseWrite {
				lastRows = done
			}
			if p == at && !cancelled {
				cancelled, cancelRows = true, done
				cancel()
			}
		}
		dir := filepath.Join(t.TempDir(), "out")
		_, err := Run(ctx, Options{Spec: s, OutDir: dir, Source: dp.NewSeededSource(1), Rows: rows, Progress: progress})
		cancel()
		if !cancelled {
			t.Fatalf("cancel at %s: the stage never reported progress", at)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancel at %s: got %v, want context.Canceled", at, err)
		}
		if len(late) > 0 {
			t.Errorf("cancel at %s: the run went on to %v", at, late)
		}
		if at == PhaseWrite && lastRows-cancelRows > synthfile.BatchRows {
			t.Errorf("cancel at %s (row %d): %d rows written after it, want at most %d", at, cancelRows, lastRows-cancelRows, synthfile.BatchRows)
		}
		releasetest.AssertOnly(t, filepath.Dir(dir))
	}
}
