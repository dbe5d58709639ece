package cli

import (
	"fmt"
	"math"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
)

// bytesPerCell is the output-size estimate's cost of one cell: the widest
// value a released column holds uncompressed (an int64 or a float64, or a
// 4-byte dictionary index with page overhead). Parquet's encodings usually
// write less, so the estimate errs on the large side.
const bytesPerCell = 8

// DefaultMaxOutputGiB is the default cap on a release's estimated size.
const DefaultMaxOutputGiB = 64

// estimateOutput returns the estimated size in bytes of a release of s
// with rows rows (0: the DP row count, at most [release.DefaultMaxRows]),
// from public parameters only: rows × released columns × [bytesPerCell].
func estimateOutput(s *spec.Spec, rows int64) (int64, int64) {
	if rows == 0 {
		rows = s.Release.Rows
	}
	if rows == 0 {
		rows = release.DefaultMaxRows
	}
	cols := int64(len(s.Release.Columns))
	if cols == 0 {
		cols = 1
	}
	per := cols * bytesPerCell
	if rows > (1<<62)/per {
		return rows, 1 << 62
	}
	return rows, rows * per
}

// checkOutputSize refuses, before any data is read, a release whose
// estimated size exceeds maxGiB GiB (exit 2).
func checkOutputSize(s *spec.Spec, rows, maxGiB int64) error {
	n, size := estimateOutput(s, rows)
	if size > maxGiB<<30 {
		return usageErrorf("%d rows × %d released columns would write about %s (estimated at %d bytes a cell, before compression), more than --max-output-gib %d: ask for fewer rows, or raise --max-output-gib if the disk can take it",
			n, len(s.Release.Columns), humanBytes(size), bytesPerCell, maxGiB)
	}
	return nil
}

// humanBytes prints a byte count in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// checkSamplers refuses, before any data is read, a release whose budget
// puts a noise scale known from public parameters outside the range the
// exact samplers draw from (exit 2). What it checks is a lower bound on
// the scales the release will use, so it never refuses a run that could
// succeed:
//
//   - join-as-one and uniformized: the noisy join size n̂ of PMW (Ghazi et
//     al. App. A: TLap with scale 2Δ̃/(ε/2) and Δ̃ ≥ 1, so ≥ 4/ε) and, for
//     two relations, Alg. 1's noisy maximum degree (scale 2/ε); for more
//     relations, Alg. 3's residual sensitivity search at β = ε/ln(1/δ)
//     (or release.beta), whose range is public ([residual.SearchLimit]);
//   - privacy-unit: its planner checks its row count noise before any data
//     is read.
//
// Scales that depend on DP outputs (PMW's rounds scale with Δ̃) can still
// fail after the data is read; they exit 2 as well ([dp.ErrUnsamplable]).
func checkSamplers(s *spec.Spec) error {
	eps, delta := s.Privacy.Epsilon, s.Privacy.Delta
	if s.Release.Method == spec.PrivacyUnit || s.Release.Method == spec.Auto && s.Privacy.Unit != "" {
		return nil
	}
	fail := func(err error) error {
		return &UsageError{Err: fmt.Errorf("privacy budget (ε = %g, δ = %g) is too small for this release (method %s): %w; raise ε (nothing was read or spent)", eps, delta, s.Release.Method, err)}
	}
	if err := dp.CheckScale("scale of the noisy join size n̂ (at least 4/ε)", 4/eps); err != nil {
		return fail(err)
	}
	private := 0
	for _, t := range s.Tables {
		if !t.Public {
			private++
		}
	}
	if len(s.Tables) <= 2 {
		if err := dp.CheckScale("scale of Alg. 1's noisy maximum degree (2/ε)", 2/eps); err != nil {
			return fail(err)
		}
		return nil
	}
	if delta > 0 && private > 0 {
		beta := eps / math.Log(1/delta)
		if s.Release.Beta > 0 {
			beta = s.Release.Beta
		}
		if _, err := residual.SearchLimit(private, beta); err != nil {
			return fail(err)
		}
	}
	return nil
}
