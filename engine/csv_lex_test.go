package engine

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// randomCSV writes a random CSV text in synth's dialect: a header and up
// to 8 records of fields fields, plain or quoted values (quoted ones with
// commas, newlines and doubled quotes), \n or \r\n line ends, the last
// line end sometimes missing.
func randomCSV(rng *rand.Rand, fields int) string {
	var b strings.Builder
	recs := 1 + rng.IntN(8)
	for r := range recs + 1 {
		for f := range fields {
			if f > 0 {
				b.WriteByte(',')
			}
			n := rng.IntN(12)
			if r == 0 {
				fmt.Fprintf(&b, "c%d", f)
				continue
			}
			if rng.IntN(3) == 0 {
				b.WriteByte('"')
				for range n {
					switch rng.IntN(8) {
					case 0:
						b.WriteString(`""`)
					case 1:
						b.WriteByte('\n')
					case 2:
						b.WriteByte(',')
					default:
						b.WriteByte(byte('a' + rng.IntN(26)))
					}
				}
				b.WriteByte('"')
				continue
			}
			// A plain value is never empty: encoding/csv, the oracle,
			// skips an empty line (a record of one empty field).
			for range n + 1 {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		if r < recs || rng.IntN(2) == 0 {
			if rng.IntN(3) == 0 {
				b.WriteString("\r\n")
			} else {
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// TestScanLongMatchesEncodingCSV: on random CSV texts in synth's dialect
// and random limits, scanLong reports the first record (not the header)
// whose bytes, line end included, exceed the limit, at the line
// encoding/csv gives its first field, with the longest value (the first
// of the longest) and whether a value of a column read is itself too
// long; nil when none is. The oracle measures records with encoding/csv's
// InputOffset and values with their unquoted lengths.
func TestScanLongMatchesEncodingCSV(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	dir := t.TempDir()
	for trial := range 400 {
		fields := 1 + rng.IntN(4)
		text := randomCSV(rng, fields)
		file := filepath.Join(dir, fmt.Sprintf("t%d.csv", trial))
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		header := make([]string, fields)
		read := make([]bool, fields)
		for i := range fields {
			header[i], read[i] = fmt.Sprintf("c%d", i), rng.IntN(2) == 0
		}
		// The limit: random, or half the time a data record's length or
		// one less (the edges).
		limit := 2 + rng.IntN(30)
		var lens []int
		lr := newCSVReader(strings.NewReader(text))
		for first := true; ; first = false {
			before := lr.InputOffset()
			if _, err := lr.Read(); err != nil {
				break
			}
			if !first {
				lens = append(lens, int(lr.InputOffset()-before))
			}
		}
		if len(lens) > 0 && rng.IntN(2) == 0 {
			limit = max(1, lens[rng.IntN(len(lens))]-rng.IntN(2))
		}
		// The oracle.
		var want *CSVError
		r := newCSVReader(strings.NewReader(text))
		for first := true; ; first = false {
			before := r.InputOffset()
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("trial %d: encoding/csv: %v on %q", trial, err, text)
			}
			if first || int(r.InputOffset()-before) <= limit {
				continue
			}
			s := &longScan{file: file, header: header, read: read, limit: limit, longField: -1}
			for i, v := range rec {
				if len(v) > s.longSize {
					s.longField, s.longSize = i, len(v)
				}
				if read[i] && len(v) > s.longRead {
					s.longRead = len(v)
				}
			}
			line, _ := r.FieldPos(0)
			want = s.report(int64(line))
			break
		}
		got := scanLong(file, header, read, limit)
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Fatalf("trial %d, limit %d, text %q:\nscanLong %+v\noracle   %+v", trial, limit, text, got, want)
		}
	}
}

// TestProjectCSVMatchesEncodingCSV: on random CSV texts in synth's
// dialect, projectCSV writes the kept columns of every record, which
// encoding/csv reads back as the source's values (each field quoted iff
// it was, so the file is the same shape); a kept value longer than the
// limit is a CSVError at its record's line; a text outside the dialect (a
// record of another number of fields, text after a closing quote, a quote
// open at the end) is errNotProjected.
func TestProjectCSVMatchesEncodingCSV(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 2))
	dir := t.TempDir()
	for trial := range 400 {
		fields := 1 + rng.IntN(4)
		text := randomCSV(rng, fields)
		broken := ""
		switch rng.IntN(6) {
		case 0:
			broken, text = "extra field", text+"\nx"+strings.Repeat(",y", fields)
		case 1:
			broken, text = "text after a closing quote", text+"\n\"ab\"c"+strings.Repeat(",y", fields-1)
		case 2:
			broken, text = "open quote", text+"\n\"ab"
		}
		file := filepath.Join(dir, fmt.Sprintf("t%d.csv", trial))
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		header := make([]string, fields)
		var keep []int
		for i := range fields {
			header[i] = fmt.Sprintf("c%d", i)
			if rng.IntN(2) == 0 {
				keep = append(keep, i)
			}
		}
		if len(keep) == 0 {
			keep = []int{fields - 1}
		}
		rng.Shuffle(len(keep), func(i, j int) { keep[i], keep[j] = keep[j], keep[i] })
		limit := 1 + rng.IntN(12)
		var out bytes.Buffer
		err := projectCSV(file, header, keep, &out, limit)
		if broken != "" {
			var ce *CSVError
			if !errors.Is(err, errNotProjected) && !errors.As(err, &ce) {
				t.Fatalf("trial %d (%s): projectCSV gave %v, want errNotProjected (%q)", trial, broken, err, text)
			}
			if err == nil {
				t.Fatalf("trial %d (%s): no error", trial, broken)
			}
			continue
		}
		// The oracle: the source's records, projected; the first kept
		// value over the limit.
		var want [][]string
		var wantErr *CSVError
		r := newCSVReader(strings.NewReader(text))
		for {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("trial %d: encoding/csv: %v", trial, err)
			}
			row := make([]string, len(keep))
			for k, i := range keep {
				row[k] = rec[i]
				if len(rec[i]) > limit && wantErr == nil {
					line, _ := r.FieldPos(0)
					wantErr = &CSVError{File: file, Line: int64(line)}
				}
			}
			want = append(want, row)
			if wantErr != nil {
				break
			}
		}
		if wantErr != nil {
			var ce *CSVError
			if !errors.As(err, &ce) || ce.File != wantErr.File || ce.Line != wantErr.Line || !strings.Contains(ce.Problem, "a value of more than") {
				t.Fatalf("trial %d, limit %d: projectCSV gave %v, want a long value at line %d (%q)", trial, limit, err, wantErr.Line, text)
			}
			continue
		}
		if err != nil {
			t.Fatalf("trial %d: projectCSV: %v (%q)", trial, err, text)
		}
		got, err := csv.NewReader(bytes.NewReader(out.Bytes())).ReadAll()
		if err != nil {
			t.Fatalf("trial %d: the projection does not parse: %v (%q)", trial, err, out.String())
		}
		if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
			t.Fatalf("trial %d, keep %v: projection %q, want %q (source %q)", trial, keep, got, want, text)
		}
	}
}
