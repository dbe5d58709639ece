package report

import "errors"

// ErrNotReport is wrapped by the error of [Write] when the target folder
// exists and holds anything but an earlier report: a report replaces the
// whole folder, so it never takes over somebody else's files.
var ErrNotReport = errors.New("report: the folder is not a synth report")
