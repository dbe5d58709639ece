package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
)

// ReportFacts are public facts about a release that the JSON report does
// not hold, for [MarkdownReport].
type ReportFacts struct {
	// Rows is the number of synthetic rows written (a DP output).
	Rows int64
	// Columns describe the released columns in output order.
	Columns []ColumnFact
	// SpecFile is the spec's file name as given; empty when the spec was
	// parsed from memory.
	SpecFile string
	// ParquetFile is the name of the synthetic data file.
	ParquetFile string
}

// ColumnFact describes one released column by its public domain.
type ColumnFact struct {
	// Name is the column's name in the output file.
	Name string
	// Source is table.column in the spec.
	Source string
	// Type is the spec type (categorical, integer, …).
	Type string
	// Domain describes the declared domain and its binning.
	Domain string
}

// FactsFor returns the facts of a release of s that wrote rows rows. It
// reads the spec only (public domains), never the data.
func FactsFor(s *spec.Spec, rows int64) ReportFacts {
	f := ReportFacts{Rows: rows, SpecFile: s.File, ParquetFile: layout.ParquetName}
	names := layout.ColumnNames(s)
	for i, r := range s.Release.Columns {
		cf := ColumnFact{Name: names[i], Source: r.Table + "." + r.Column}
		if c := findColumn(s, r.Table, r.Column); c != nil {
			cf.Type = string(c.Type)
			cf.Domain = domainText(c)
		}
		f.Columns = append(f.Columns, cf)
	}
	// Measure columns (release.measures) follow, as the file holds them.
	if mnames, err := measureNames(s, names); err == nil {
		for i, r := range s.Release.Measures {
			cf := ColumnFact{Name: mnames[i], Source: r.Table + "." + r.Column, Type: "measure (float64)"}
			if c := findColumn(s, r.Table, r.Column); c != nil {
				cf.Domain = "sum per cell of the workload's conditions; values in " + domainText(c)
			}
			f.Columns = append(f.Columns, cf)
		}
	}
	return f
}

// InputFiles lists the spec's input files (table and file name, no digest)
// for [dp.ReportMeta].Inputs.
func InputFiles(s *spec.Spec) []dp.InputFile {
	var in []dp.InputFile
	for _, t := range s.Tables {
		in = append(in, dp.InputFile{Table: t.Name, File: filepath.Base(t.Source)})
	}
	return in
}

// HashInputs returns InputFiles(s) with the SHA-256 of every file that is
// a local path (URLs are left without a digest). The digests are a
// function of the private data and not DP: they are for the data
// custodian (a log line, an internal record), never for a published report
// (DESIGN.md §3, invariant 5; see [dp.InputFile]). It stops with ctx's
// error within a megabyte once ctx is done.
func HashInputs(ctx context.Context, s *spec.Spec) ([]dp.InputFile, error) {
	in := InputFiles(s)
	for i, t := range s.Tables {
		if strings.Contains(t.Source, "://") {
			continue
		}
		// A source that is not a regular file is not opened: opening a
		// named pipe blocks until a writer comes, and the load refuses it.
		if st, err := os.Stat(t.Source); err != nil {
			return nil, fmt.Errorf("release: %w", err)
		} else if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("release: %s is not a regular file", t.Source)
		}
		f, err := os.Open(t.Source)
		if err != nil {
			return nil, fmt.Errorf("release: %w", err)
		}
		h := sha256.New()
		_, err = io.CopyBuffer(h, ctxReader{ctx, f}, make([]byte, 1<<20))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("release: %s: %w", t.Source, err)
		}
		in[i].SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return in, nil
}

// ctxReader is a reader that fails with its context's error once the
// context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func findColumn(s *spec.Spec, table, column string) *spec.Column {
	for i := range s.Tables {
		if s.Tables[i].Name != table {
			continue
		}
		for j := range s.Tables[i].Columns {
			if s.Tables[i].Columns[j].Name == column {
				return &s.Tables[i].Columns[j]
			}
		}
	}
	return nil
}

// domainText describes a column's public domain.
func domainText(c *spec.Column) string {
	if c.Nullable {
		return valueDomainText(c) + ", and NULL (nullable)"
	}
	return valueDomainText(c)
}

// valueDomainText describes a column's values.
func valueDomainText(c *spec.Column) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch c.Type {
	case spec.Categorical:
		return fmt.Sprintf("%d values: %s", len(c.Values), strings.Join(c.Values, ", "))
	case spec.Boolean:
		return "false, true"
	case spec.Integer, spec.Numeric:
		e := c.Edges()
		if len(c.BinEdges) > 0 {
			es := make([]string, len(e))
			for i, x := range e {
				es[i] = num(x)
			}
			return fmt.Sprintf("%d bins with edges %s", len(e)-1, strings.Join(es, ", "))
		}
		return fmt.Sprintf("[%s, %s] in %d bins", num(c.Min), num(c.Max), c.ValueSize())
	case spec.Date:
		return fmt.Sprintf("%s to %s by %s (%d bins)", c.DateMin.UTC().Format(time.DateOnly),
			c.DateMax.UTC().Format(time.DateOnly), c.Granularity, c.ValueSize())
	}
	return ""
}

// MarkdownReport renders the privacy report r of a release for a reader
// who is not a DP specialist (a compliance officer): what was released,
// the privacy unit and guarantee in plain words, ε and δ, every mechanism
// with its share of the budget and its reference, the DP outputs, the
// public parameters, the software version, the time and the digests. It
// holds nothing that r and f do not hold, so it is as public as they are.
func MarkdownReport(r dp.Report, f ReportFacts) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Privacy report\n\n")
	if r.Seeded {
		p("> **NOT PRIVATE.** This release was made with a fixed seed (`--seed`) for testing or a\n")
		p("> demonstration. Anybody who knows the seed can recompute and remove the noise, so the\n")
		p("> guarantee below does not hold. Do not publish it as a private release.\n\n")
	}
	if w, ok := r.Parameters["rows_near_zero"].(string); ok && w != "" {
		p("> **WARNING: THE JOIN MAY BE EMPTY.** %s%s.\n\n", strings.ToUpper(w[:1]), w[1:])
	}
	p("| | |\n| --- | --- |\n")
	p("| Status | %s |\n", cell(r.Privacy))
	p("| Created | %s |\n", cell(orNone(r.CreatedAt, "not recorded")))
	p("| Software | synth %s |\n", cell(orNone(r.SoftwareVersion, "unknown")))
	p("| Mechanism | %s |\n", cell(r.Mechanism))
	p("| Budget | ε = %s, δ = %s |\n", num(r.Epsilon), num(r.Delta))
	p("| Spent | ε = %s, δ = %s |\n\n", num(r.Spent.Epsilon), num(r.Spent.Delta))

	p("## What was released\n\n")
	file := orNone(f.ParquetFile, layout.ParquetName)
	p("`%s`: %s synthetic rows", file, strconv.FormatInt(f.Rows, 10))
	cols := f.Columns
	if len(cols) == 0 {
		for _, c := range r.Columns {
			cols = append(cols, ColumnFact{Name: c})
		}
	}
	p(" with %d column(s). The rows are generated from noisy statistics; no row is a row of the input.", len(cols))
	for _, o := range r.Outputs {
		if o.Name == "pmw_rows_floored" && o.Value == 1 {
			p(" The noisy estimate of the join size was below its own noise level, so the row count is that public")
			p(" noise level, not an estimate of the input's size.")
		}
	}
	p("\n\n")
	if len(cols) > 0 {
		p("| column | from | type | public domain |\n| --- | --- | --- | --- |\n")
		for _, c := range cols {
			p("| %s | %s | %s | %s |\n", cell(c.Name), cell(c.Source), cell(c.Type), cell(c.Domain))
		}
		p("\n")
	}

	p("## The guarantee in plain words\n\n")
	p("**Privacy unit.** Two input databases are neighbours when they differ by %s. ", strings.TrimSuffix(unitText(r.Neighbours), "."))
	p("Everything published (the synthetic file, this report and the JSON report) is computed so that it ")
	p("looks almost the same whether or not any one such row was in the input.\n\n")
	units := strings.HasPrefix(r.Neighbours, "one privacy unit")
	what, many := "one row is", "the number of rows"
	if units {
		what, many = "one unit with all its rows is", "the number of units"
	}
	p("**ε = %s and δ = %s.** For every possible result, its probability changes by at most a factor ", num(r.Epsilon), num(r.Delta))
	p("e^ε = %s when %s added or removed, except with probability at most δ. ", num(round(math.Exp(r.Epsilon), 3)), what)
	p("A smaller ε means stronger privacy; δ should be far smaller than one over %s. ", many)
	p("The guarantee covers the whole run: every mechanism below draws from this one budget, and the ")
	p("spends add up to ε = %s, δ = %s by the composition rules stated with them.\n\n", num(r.Spent.Epsilon), num(r.Spent.Delta))
	if units {
		p("**What it does not cover.** Each unit is protected with all its rows in every private table; a person who ")
		p("appears as several units (say, two customer accounts) is protected with a correspondingly weaker guarantee ")
		p("(group privacy: about k·ε for k units). ")
	} else {
		p("**What it does not cover.** A person who contributes many rows (or rows in several tables) is protected ")
		p("with a correspondingly weaker guarantee (group privacy: about k·ε for k rows). ")
	}
	p("Error messages, logs and the `sensitivity` and `evaluate` commands read the private data directly ")
	p("and are for the data custodian only.\n\n")

	p("## Mechanisms and their share of the budget\n\n")
	p("Each mechanism is listed with its (ε, δ), its share of the run's ε and the rule by which it adds up; ")
	p("indented entries are the parts of the entry above them.\n\n")
	for _, s := range r.Spends {
		writeSpend(&b, s, r.Epsilon, 0)
	}
	p("\n")

	if ss, ok := r.Parameters["marginals_signal"].([]Signal); ok {
		p("## What the data carried\n\n")
		p("%s.\n\n", strings.ToUpper(fmt.Sprint(r.Parameters["signal_headline"])[:1])+fmt.Sprint(r.Parameters["signal_headline"])[1:])
		p("For each measured marginal: the noise per cell of its combined measurements (in rows) and the share of its measured ")
		p("spread the fit kept (0: no more than noise alone would produce, so it fell back to uniform). Both are computed from ")
		p("noisy outputs and public noise scales.\n\n")
		p("| marginal | cells | noise per cell (rows) | kept |\n| --- | ---: | ---: | ---: |\n")
		for _, s := range ss {
			p("| %s | %d | %s | %s |\n", cell(s.Marginal), s.Cells, num(round(s.NoisePerCell, 1)), num(round(s.Kept, 3)))
		}
		p("\n")
	}
	writeMeasuresMarkdown(&b, r.Parameters["measures"])
	p("## Published DP outputs\n\n")
	if len(r.Outputs) == 0 {
		p("None besides the synthetic rows.\n\n")
	} else {
		p("These numbers were computed from the private data with noise and are covered by the guarantee.\n\n")
		p("| output | value | meaning |\n| --- | --- | --- |\n")
		for _, o := range r.Outputs {
			p("| %s | %s | %s |\n", cell(o.Name), num(o.Value), cell(outputMeaning[o.Name]))
		}
		p("\n")
	}

	p("## Public parameters\n\n")
	p("These come from the spec, the software or the DP outputs above (post-processing); none is computed from the data without noise.\n\n")
	p("| parameter | value |\n| --- | --- |\n")
	for _, k := range sortedKeys(r.Parameters) {
		p("| %s | %s |\n", cell(k), cell(jsonText(r.Parameters[k])))
	}
	p("\n")

	p("## Provenance\n\n")
	p("| item | identifier |\n| --- | --- |\n")
	specItem := "spec"
	if f.SpecFile != "" {
		specItem = "spec `" + filepath.Base(f.SpecFile) + "`"
	}
	p("| %s | SHA-256 %s |\n", cell(specItem), cell(orNone(r.SpecDigest, "not recorded")))
	for _, in := range r.Inputs {
		id := "SHA-256 " + in.SHA256
		if in.SHA256 == "" {
			id = "digest not published (a hash of private data is not differentially private)"
		}
		p("| table %s: `%s` | %s |\n", cell(in.Table), cell(in.File), cell(id))
	}
	p("| software | synth %s |\n", cell(orNone(r.SoftwareVersion, "unknown")))
	p("\nThe same facts are in `%s` beside this file and in the Parquet file's key-value metadata (`%s`).\n",
		layout.ReportName, layout.MetadataKey)
	return b.Bytes()
}

// outputMeaning explains the DP outputs a release publishes.
var outputMeaning = map[string]string{
	"delta_tilde":      "Δ̃: noisy upper bound on how many join rows one input row can change",
	"n_hat":            "n̂: noisy (padded) size of the join",
	"pmw_rows":         "rows written: an unbiased DP estimate of the join size, unless pmw_rows_floored is 1",
	"pmw_rows_floored": "1 when the join-size estimate was below its own noise level and the row count was raised to that public level (then biased upwards)",
	"pmw_rounds":       "number of PMW rounds run (chosen from DP outputs only)",
	"pmw_few_rows":     "1 when the factored model's first 1-way measurements held few rows against their noise (below 8σ): their noise-dominated cells were pooled and every 1-way marginal measured again from the rounds' budget",
	"pmw_eps0":         "ε₀ per PMW step, from the rounds and the budget",
	"numerical_n_hat":  "n̂ of a measure's numerical run: noisy number of universe elements (tuples × set bits on a reduced universe)",
	"numerical_alpha":  "α̃ of a measure's numerical run: noisy max error of its counting queries, which sets the truncation thresholds",
}

// references maps phrases of a spend's mechanism or rule to the papers the
// mechanism follows.
var references = []struct{ phrase, ref string }{
	{"Qiu et al.", "Qiu, Dong, Yi, Wu, Li, *Releasing Private Data for Numerical Queries*, KDD 2022, Alg. 2, §4.1, §5, §6"},
	{"join-as-one", "Ghazi, Hu, Kumar, Manurangsi, *Differentially Private Data Release over Multiple Tables*, PODS 2023, Alg. 1 and 3"},
	{"uniformized", "Ghazi et al. PODS 2023, Alg. 4–7 (degree-uniformized partitions)"},
	{"residual sensitivity", "Ghazi et al. PODS 2023, Def. 3.6, Lemma 3.7, Alg. 3 (truncated Laplace TLap of §2)"},
	{"max degree", "Ghazi et al. PODS 2023, Alg. 1"},
	{"n̂", "Ghazi et al. PODS 2023, App. A; exact discrete sampler: Canonne, Kamath, Steinke 2020"},
	{"MWEM", "Hardt, Ligett, McSherry, *A Simple and Practical Algorithm for Differentially Private Data Release*, NeurIPS 2012; zCDP: Bun, Steinke 2016"},
	{"discrete Gaussian", "Canonne, Kamath, Steinke, *The Discrete Gaussian for Differential Privacy*, NeurIPS 2020"},
	{"exponential mechanism", "McSherry, Talwar, FOCS 2007; bounded range: Cesar, Rogers 2021"},
	{"Laplace", "Dwork, McSherry, Nissim, Smith 2006; discrete: Canonne, Kamath, Steinke 2020"},
	{"pmw", "Hardt, Rothblum, FOCS 2010; as run by Ghazi et al. PODS 2023, App. A"},
}

// reference returns the reference of the first phrase found in the
// spend's mechanism, else in its rule.
func reference(s dp.Spend) string {
	for _, text := range []string{s.Mechanism, s.Rule} {
		for _, r := range references {
			if strings.Contains(text, r.phrase) {
				return r.ref
			}
		}
	}
	return ""
}

func writeSpend(b *bytes.Buffer, s dp.Spend, total float64, depth int) {
	ind := strings.Repeat("  ", depth)
	fmt.Fprintf(b, "%s- **%s** — ", ind, oneLine(s.Mechanism))
	if s.Rho > 0 && s.Epsilon == 0 && s.Delta == 0 {
		// A part of a zCDP share: it is counted in ρ and the share
		// converts the sum of its parts' ρ to (ε, δ) once.
		fmt.Fprintf(b, "zCDP ρ = %s (counted in ρ within the share above)", num(s.Rho))
	} else {
		fmt.Fprintf(b, "ε = %s, δ = %s", num(s.Epsilon), num(s.Delta))
		if total > 0 && s.Epsilon > 0 {
			fmt.Fprintf(b, " (%s%% of ε)", num(round(100*s.Epsilon/total, 2)))
		}
		if s.Rho > 0 {
			fmt.Fprintf(b, ", zCDP ρ = %s", num(s.Rho))
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "%s  - How it adds up: %s\n", ind, oneLine(s.Rule))
	if ref := reference(s); ref != "" {
		fmt.Fprintf(b, "%s  - Reference: %s\n", ind, ref)
	}
	if len(s.Details) > 0 {
		var kv []string
		for _, k := range sortedKeys(s.Details) {
			kv = append(kv, k+" = "+jsonText(s.Details[k]))
		}
		fmt.Fprintf(b, "%s  - Parameters: %s\n", ind, oneLine(strings.Join(kv, ", ")))
	}
	for _, p := range s.Parts {
		writeSpend(b, p, total, depth+1)
	}
	if len(s.Instances) > 0 {
		// How the sub-instances compose (disjoint, or a tuple in up to K of
		// them) is the split's own rule, printed above; this line must not
		// claim more than it.
		fmt.Fprintf(b, "%s  - %d sub-instances, each spending within this budget as \"How it adds up\" says:\n",
			ind, len(s.Instances))
		for i, in := range s.Instances {
			fmt.Fprintf(b, "%s    - sub-instance %d:\n", ind, i+1)
			for _, p := range in {
				writeSpend(b, p, total, depth+3)
			}
		}
	}
}

// unitText turns the neighbour relation into a phrase that completes
// "differ by …".
func unitText(n string) string {
	if n == "" {
		return "one row (the neighbour relation was not recorded)"
	}
	return strings.TrimPrefix(n, "add or remove ")
}

// num renders a number: integers in full, others in the shortest form.
func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func round(f float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(f*p) / p
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return num(x)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
