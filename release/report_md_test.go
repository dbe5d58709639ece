package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/spec"
)

// update rewrites the golden files under testdata/.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestMarkdownReportGolden renders a fixed report (a seeded TPC-H release
// of examples/tpch/synth.yaml) and compares it with
// testdata/privacy-report.golden.md; go test -run MarkdownReport -update
// rewrites the golden file.
func TestMarkdownReportGolden(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "report-md.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r dp.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(filepath.Join("..", "examples", "tpch", "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f := FactsFor(s, 47322)
	f.SpecFile = "examples/tpch/synth.yaml"
	got := MarkdownReport(r, f)
	golden := filepath.Join("testdata", "privacy-report.golden.md")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("MarkdownReport differs from %s (go test ./release -run MarkdownReport -update rewrites it):\n%s", golden, got)
	}
}

func TestMarkdownReportContents(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "report-md.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r dp.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	md := string(MarkdownReport(r, ReportFacts{Rows: 7}))
	// Every spend, however deep, is listed.
	var walk func([]dp.Spend)
	walk = func(ss []dp.Spend) {
		for _, s := range ss {
			if !strings.Contains(md, "**"+s.Mechanism+"**") {
				t.Errorf("spend %q missing", s.Mechanism)
			}
			walk(s.Parts)
			for _, in := range s.Instances {
				walk(in)
			}
		}
	}
	walk(r.Spends)
	for _, want := range []string{"NOT PRIVATE", "ε = 1, δ = 1e-06", r.SpecDigest, r.SoftwareVersion, "7 synthetic rows",
		"digest not published", "Ghazi, Hu, Kumar, Manurangsi"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	// A private run has no banner; a digest given is shown.
	r.Seeded, r.Privacy = false, dp.PrivacyPrivate
	r.Inputs = []dp.InputFile{{Table: "t", File: "t.csv", SHA256: "abc123"}}
	md = string(MarkdownReport(r, ReportFacts{}))
	if strings.Contains(md, "NOT PRIVATE") || !strings.Contains(md, "SHA-256 abc123") {
		t.Errorf("private report:\n%s", md)
	}
	// Parallel sub-instances are walked.
	l, _ := dp.NewLedger(dp.Budget{Epsilon: 1})
	subs, err := l.SplitParallel("uniformized: buckets", dp.Budget{Epsilon: 1}, 2, "parallel composition", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = subs[0].Charge("bucket zero laplace", dp.Budget{Epsilon: 1}, "r", nil)
	_ = subs[1].Charge("bucket one laplace", dp.Budget{Epsilon: 1}, "r", nil)
	md = string(MarkdownReport(l.Report(dp.ReportMeta{}), ReportFacts{}))
	for _, want := range []string{"2 sub-instances, each spending within this budget", "How it adds up: parallel composition", "**bucket zero laplace**", "**bucket one laplace**"} {
		if !strings.Contains(md, want) {
			t.Errorf("parallel report lacks %q:\n%s", want, md)
		}
	}
	// The report claims no disjointness of its own: a split whose rule says
	// a tuple may sit in several sub-instances is not called disjoint.
	if strings.Contains(md, "disjoint") {
		t.Errorf("the sub-instance line claims disjointness the rule did not state:\n%s", md)
	}
}

func TestHashInputs(t *testing.T) {
	s, err := spec.Load(filepath.Join("..", "examples", "tpch", "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := HashInputs(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != len(s.Tables) {
		t.Fatalf("%d inputs for %d tables", len(in), len(s.Tables))
	}
	for i, f := range in {
		raw, err := os.ReadFile(s.Tables[i].Source)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(raw); f.SHA256 != hex.EncodeToString(sum[:]) || f.Table != s.Tables[i].Name ||
			f.File != filepath.Base(s.Tables[i].Source) {
			t.Errorf("input %d = %+v", i, f)
		}
	}
	// InputFiles, for a published report, carries no digest.
	for _, f := range InputFiles(s) {
		if f.SHA256 != "" {
			t.Errorf("InputFiles has a digest: %+v", f)
		}
	}
	// A cancelled context stops the hashing with its error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := HashInputs(ctx, s); !errors.Is(err, context.Canceled) {
		t.Errorf("HashInputs with a cancelled context = %v, want context.Canceled", err)
	}
}
