package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/synthfiletest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const tinySpec = "testdata/tiny/synth.yaml"

// tinySynthetic are the cells of the tiny instance's synthetic file: the
// universe is color (2) × size (3) × amount (5 bins of 2), first column
// most significant, in increasing order; 9 rows.
var tinySynthetic = []struct{ cell, count int64 }{
	{0*15 + 0*5 + 1, 2}, // red, S, 2–3
	{0*15 + 1*5 + 3, 1}, // red, M, 6–7
	{0*15 + 2*5 + 4, 1}, // red, L, 8–9
	{1*15 + 0*5 + 2, 2}, // blue, S, 4–5
	{1*15 + 1*5 + 2, 1}, // blue, M, 4–5
	{1*15 + 2*5 + 0, 2}, // blue, L, 0–1
}

// tinyAnswers answers the tiny instance's workload on its fixed synthetic
// file through the engine, as evaluate does.
func tinyAnswers(t testing.TB) (*spec.Spec, *workload.Answers) {
	t.Helper()
	ctx := context.Background()
	s, err := spec.Load(tinySpec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), layout.ParquetName)
	var cells []engine.Cell
	for _, c := range tinySynthetic {
		cells = append(cells, engine.Cell{Index: c.cell, Count: c.count})
	}
	synthfiletest.WriteHistogram(t, s, path, cells, `{}`)
	eng, err := engine.Open(ctx, "duckdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if err := eng.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	a, err := workload.Answer(ctx, s, eng, path)
	if err != nil {
		t.Fatal(err)
	}
	a.Synthetic = "synthetic.parquet" // the temporary path would change every run
	return s, a
}

func tinyInput(t testing.TB) Input {
	t.Helper()
	s, a := tinyAnswers(t)
	priv, src, err := ReadPrivacy("testdata/tiny/synthetic.parquet")
	if err != nil || priv == nil {
		t.Fatalf("privacy report: %v (%v)", priv, err)
	}
	return Input{Answers: a, Labels: BinLabels(s), Config: tinySpec, Privacy: priv, PrivacySource: src}
}

// TestSummaryGolden writes the tiny instance's report and compares its
// summary.json with testdata/summary.golden.json. Regenerate with
//
//	go test ./internal/report -run TestSummaryGolden -update
func TestSummaryGolden(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	if _, err := Write(context.Background(), dir, tinyInput(t), Options{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, SummaryName))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("summary.json differs from %s (run with -update if intended)\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}

// TestSummarizeByHand checks the headline arithmetic on answers small
// enough to work out on paper.
func TestSummarizeByHand(t *testing.T) {
	a := &workload.Answers{
		TrueRows: 4, SyntheticRows: 4, Names: []string{"x", "y"}, Sizes: []int{2, 2},
		Families: []workload.FamilyAnswers{
			// Shares (.75, .25) vs (.5, .5): TVD .25; uniform the same.
			{Name: "marginal(x)", Kind: "marginal", Columns: []int{0}, True: []float64{3, 1}, Synthetic: []float64{2, 2}, Uniform: []float64{2, 2}},
			// Identical: TVD 0; uniform (.25 each) vs (1, 0, 0, 0): .75.
			{Name: "marginal(x,y)", Kind: "marginal", Columns: []int{0, 1}, True: []float64{4, 0, 0, 0}, Synthetic: []float64{4, 0, 0, 0}, Uniform: []float64{1, 1, 1, 1}},
			// Errors 1, 0, 1 over 4 true rows: mean 2/12.
			{Name: "ranges(y)", Kind: "ranges", Columns: []int{1}, True: []float64{3, 4, 1}, Synthetic: []float64{2, 4, 2}, Uniform: []float64{2, 4, 2}},
			// |12 − 10| / 10 = .2; uniform |5 − 10| / 10 = .5.
			{Name: "sum(y)", Kind: "sum", True: []float64{10}, Synthetic: []float64{12}, Uniform: []float64{5}},
		},
	}
	s, err := Summarize(Input{Answers: a})
	if err != nil {
		t.Fatal(err)
	}
	want := []Headline{
		{Kind: "marginal", Metric: MetricTVD, Families: 2, Queries: 6, Synthetic: 0.125, Uniform: 0.5},
		{Kind: "ranges", Metric: MetricRangeError, Families: 1, Queries: 3, Synthetic: 2.0 / 12, Uniform: 2.0 / 12},
		{Kind: "sum", Metric: MetricSumError, Families: 1, Queries: 1, Synthetic: 0.2, Uniform: 0.5},
	}
	if len(s.Headline) != len(want) {
		t.Fatalf("headline %+v, want %+v", s.Headline, want)
	}
	for i, h := range s.Headline {
		w := want[i]
		if h.Kind != w.Kind || h.Metric != w.Metric || h.Families != w.Families || h.Queries != w.Queries ||
			math.Abs(h.Synthetic-w.Synthetic) > 1e-12 || math.Abs(h.Uniform-w.Uniform) > 1e-12 {
			t.Errorf("headline %d = %+v, want %+v", i, h, w)
		}
	}
	if r := s.Headline[0].RatioToUniform; r == nil || *r != 0.25 {
		t.Errorf("marginal ratio to uniform %v, want 0.25", r)
	}
	if s.Privacy != nil {
		t.Errorf("privacy %+v without a privacy report", s.Privacy)
	}
	if f := s.Families[3]; f.TrueValue == nil || *f.TrueValue != 10 || *f.SyntheticValue != 12 {
		t.Errorf("sum family %+v", f)
	}
	// Errors 1 and 1 on true counts 3 and 1: relative 1/3 and 1.
	if f := s.Families[0]; f.Absolute.Max != 1 || f.Relative.Max != 1 || f.Relative.Median != 1.0/3 {
		t.Errorf("marginal(x) errors %+v %+v, want max 1, relative max 1 and median 1/3", f.Absolute, f.Relative)
	}
}

// attrRE finds every attribute that makes a browser load or follow a URL.
var attrRE = regexp.MustCompile(`(?i)\b(src|href|srcset|action|formaction|poster|data|background|xlink:href)\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))`)

// offending lists what makes page, written in dir, not self-contained:
// a script, a network URL, a URL outside dir or to a missing file, CSS
// that imports or fetches.
func offending(dir string, page []byte) []string {
	var bad []string
	low := strings.ToLower(string(page))
	for _, s := range []string{"<script", "javascript:", "@import", "url(", "<iframe", "<object", "<embed", "<link", "http://", "https://"} {
		if strings.Contains(low, s) {
			bad = append(bad, "contains "+s)
		}
	}
	for _, m := range attrRE.FindAllStringSubmatch(string(page), -1) {
		u := m[3] + m[4] + m[5]
		switch {
		case strings.HasPrefix(u, "data:image/png;base64,"):
		case strings.Contains(u, ":") || strings.HasPrefix(u, "//") || strings.HasPrefix(u, "/") || u == "":
			bad = append(bad, m[1]+"="+u)
		default:
			p := filepath.Join(dir, filepath.FromSlash(u))
			rel, err := filepath.Rel(dir, p)
			if err != nil || strings.HasPrefix(rel, "..") {
				bad = append(bad, m[1]+"="+u+" leaves the folder")
			} else if _, err := os.Stat(p); err != nil {
				bad = append(bad, m[1]+"="+u+" is missing")
			}
		}
	}
	return bad
}

// TestHTMLSelfContained: index.html embeds every figure as a data URI,
// links only to files inside the folder that exist, and loads nothing
// from the network and no script. The checker itself flags planted
// offenders.
func TestHTMLSelfContained(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	if _, err := Write(context.Background(), dir, tinyInput(t), Options{}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, IndexName))
	if err != nil {
		t.Fatal(err)
	}
	if bad := offending(dir, page); len(bad) > 0 {
		t.Errorf("index.html is not self-contained: %v", bad)
	}
	if !strings.Contains(string(page), "INTERNAL — contains statistics of the private data, do not publish") {
		t.Error("index.html lacks the INTERNAL banner")
	}
	figs, err := os.ReadDir(filepath.Join(dir, FigDir))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `src="data:image/png;base64,`); n != len(figs) || n < 5 {
		t.Errorf("%d embedded images for %d figure files (want equal, ≥ 5: 3 bars, 1 heat map, 2 box plots, sums)", n, len(figs))
	}
	for _, plant := range []string{
		`<script>alert(1)</script>`,
		`<img src="https://example.com/x.png">`,
		`<a href="../secret.csv">x</a>`,
		`<a href="fig/none.png">x</a>`,
		`<style>body { background: url(x.png) }</style>`,
		`<img src="//cdn.example.com/x.png">`,
	} {
		if bad := offending(dir, append(append([]byte{}, page...), plant...)); len(bad) == 0 {
			t.Errorf("the checker misses %s", plant)
		}
	}
}

// TestWriteRefusesAndReplaces: a folder holding other files, or a file,
// is refused before anything is drawn and left untouched; an empty folder
// and an earlier report are replaced; a cancelled run leaves no trace.
func TestWriteRefusesAndReplaces(t *testing.T) {
	in := tinyInput(t)
	ctx := context.Background()
	root := t.TempDir()

	other := filepath.Join(root, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{other, file} {
		if _, err := Write(ctx, dir, in, Options{}); !errors.Is(err, ErrNotReport) {
			t.Errorf("Write(%s) = %v, want ErrNotReport", dir, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(other, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the refused folder changed: %q, %v", b, err)
	}

	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, empty, in, Options{}); err != nil {
		t.Fatalf("empty folder: %v", err)
	}
	// Again over the earlier report, with a marker that must go.
	marker := filepath.Join(empty, FigDir, "old.png")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file of somebody else's under fig/ makes it not a report.
	foreign := filepath.Join(empty, FigDir, "notes.txt")
	if err := os.WriteFile(foreign, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, empty, in, Options{}); !errors.Is(err, ErrNotReport) {
		t.Errorf("report with fig/notes.txt: %v, want ErrNotReport", err)
	}
	if err := os.Remove(foreign); err != nil {
		t.Fatal(err)
	}
	var calls, total int
	if _, err := Write(ctx, empty, in, Options{Progress: func(d, n int) { calls, total = d, n }}); err != nil {
		t.Fatalf("earlier report: %v", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the earlier report's file survived: %v", err)
	}
	if calls == 0 || calls != total {
		t.Errorf("progress ended at %d of %d", calls, total)
	}

	// A link to the report: the report it points to is replaced, the link
	// stays.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(empty, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, link, in, Options{}); err != nil {
		t.Fatalf("through a link: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	gone := filepath.Join(root, "cancelled")
	if _, err := Write(cancelled, gone, in, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Write = %v", err)
	}
	// Cancelled after the last figure: publish stops and removes its
	// staging folder.
	late, cancelLate := context.WithCancel(ctx)
	defer cancelLate()
	if _, err := Write(late, gone, in, Options{Progress: func(d, n int) {
		if d == n {
			cancelLate()
		}
	}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Write cancelled while publishing = %v", err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "empty file other" {
		t.Errorf("folder holds %v, want only empty, file, other (no staging folder, no cancelled report)", names)
	}
}

// TestBinLabels checks the labels of every column type.
func TestBinLabels(t *testing.T) {
	s, err := spec.Load(tinySpec)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(BinLabels(s))
	want := `[["red","blue"],["S","M","L"],["0–1","2–3","4–5","6–7","8–9"]]`
	if string(got) != want {
		t.Errorf("labels %s, want %s", got, want)
	}
	for _, c := range []struct {
		col  spec.Column
		want string
	}{
		{spec.Column{Type: spec.Numeric, Min: 0, Max: 1, Bins: 2}, `["[0, 0.5)","[0.5, 1]"]`},
		{spec.Column{Type: spec.Boolean}, `["false","true"]`},
		{spec.Column{Type: spec.Integer, Min: 1, Max: 3}, `["1","2","3"]`},
		// A nullable column's NULL cell is the last.
		{spec.Column{Type: spec.Numeric, Min: 0, Max: 1, Bins: 2, Nullable: true}, `["[0, 0.5)","[0.5, 1]","NULL"]`},
		{spec.Column{Type: spec.Boolean, Nullable: true}, `["false","true","NULL"]`},
		{spec.Column{Type: spec.Integer, Min: 1, Max: 3, Nullable: true}, `["1","2","3","NULL"]`},
		{spec.Column{Type: spec.Categorical, Values: []string{"a"}, Nullable: true}, `["a","NULL"]`},
	} {
		got, _ := json.Marshal(columnLabels(&c.col))
		if string(got) != c.want {
			t.Errorf("%+v: labels %s, want %s", c.col, got, c.want)
		}
	}
}

// TestGrade: a score at most half the uniform one is kept, one at 90% of
// it or more is no better than uniform (a synthetic file that is uniform
// must not be shown as better because of rounding).
func TestGrade(t *testing.T) {
	for _, c := range []struct {
		syn, uni float64
		want     string
	}{
		{0.01, 0.4, "better"}, {0.2, 0.4, "better"}, {0.3, 0.4, ""}, {0.0707, 0.0708, "worse"}, {0.5, 0.4, "worse"},
		{0, 0, "better"}, {0.1, 0, "worse"},
	} {
		if got := grade(c.syn, c.uni); got != c.want {
			t.Errorf("grade(%v, %v) = %q, want %q", c.syn, c.uni, got, c.want)
		}
	}
}

// TestReadPrivacy: the report in the file's own Parquet metadata wins over
// a privacy-report.json beside it (which may belong to another run); the
// sidecar is read when the file is absent; a file that is not Parquet is
// an error naming it; neither gives nil. A page without a report says so.
func TestReadPrivacy(t *testing.T) {
	s, err := spec.Load(tinySpec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, layout.ParquetName)
	synthfiletest.WriteHistogram(t, s, path, nil, `{"epsilon": 2, "mechanism": "in the file"}`)
	if err := os.WriteFile(filepath.Join(dir, layout.ReportName), []byte(`{"epsilon": 3, "mechanism": "beside"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, src, err := ReadPrivacy(path)
	if err != nil || r == nil || r.Epsilon != 2 || !strings.Contains(src, "Parquet metadata") {
		t.Errorf("ReadPrivacy(file with metadata) = %+v, %q, %v; want ε = 2 from the metadata", r, src, err)
	}
	r, src, err = ReadPrivacy(filepath.Join(dir, "gone.parquet"))
	if err != nil || r == nil || r.Epsilon != 3 || src != filepath.Join(dir, layout.ReportName) {
		t.Errorf("ReadPrivacy(missing file) = %+v, %q, %v; want ε = 3 from the sidecar", r, src, err)
	}
	bad := filepath.Join(dir, "bad.parquet")
	if err := os.WriteFile(bad, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadPrivacy(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("ReadPrivacy(not Parquet) = %v, want an error naming %s", err, bad)
	}
	if r, _, err := ReadPrivacy(filepath.Join(t.TempDir(), "x.parquet")); r != nil || err != nil {
		t.Errorf("ReadPrivacy(nothing) = %+v, %v; want nil, nil", r, err)
	}

	in := tinyInput(t)
	in.Privacy = nil
	out := filepath.Join(t.TempDir(), "report")
	if _, err := Write(context.Background(), out, in, Options{}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, IndexName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "No privacy report was found") {
		t.Error("a page without a privacy report does not say so")
	}
}
