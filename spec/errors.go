package spec

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every error that reports a problem in a spec (or
// in the SDV metadata file it names): check with errors.Is(err, ErrInvalid).
// Errors reading the spec file itself (a missing file, a folder, a
// permission problem) wrap it too, and the underlying error (so
// errors.Is(err, fs.ErrNotExist) still works): the spec is what the user
// got wrong.
var ErrInvalid = errors.New("spec: invalid spec")

// Error is a problem at one place of a spec. Its message reads
//
//	spec: synth.yaml:12: tables[0].columns.age.bins: must be > 0, got -3
//
// with the parts that are unknown left out. Error wraps both [ErrInvalid] and
// Err.
type Error struct {
	// File is the spec file as given to [Load] or [Parse] (or the SDV
	// metadata file when the problem is there); empty when parsed from
	// memory without a name.
	File string
	// Line is the 1-based line of the offending key or value; 0 when
	// unknown.
	Line int
	// Key is the path of the offending key, such as
	// tables[0].columns.age.bins or release.columns[2]; empty for problems
	// of the whole document (YAML syntax errors).
	Key string
	// Err is the problem itself.
	Err error
}

// Error renders the error as "spec: file:line: key: problem".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("spec: ")
	switch {
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File + ":" + strconv.Itoa(e.Line) + ": ")
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("invalid")
	}
	return b.String()
}

// Unwrap returns [ErrInvalid] and Err, so that errors.Is and errors.As see
// both.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.Err}
}
