package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/workload"
)

// Format identifies summary.json's layout; [Write] also recognises an
// earlier report by it.
const Format = "synth-evaluation-report/1"

// The headline metrics, one per workload kind. Lower is better for all.
const (
	// MetricTVD is a marginal's total-variation distance ½·Σ|p − q|
	// between the true and the synthetic shares of its cells, averaged over
	// the marginals.
	MetricTVD = "mean TVD of the marginals' shares"
	// MetricRangeError is a range query's |synthetic − true| divided by
	// the true join size, averaged over the range queries.
	MetricRangeError = "mean |error| of the range counts / true join rows"
	// MetricSumError is a numeric sum's relative error
	// |synthetic − true| / max(|true|, 1), averaged over the sums.
	MetricSumError = "mean relative error of the sums"
)

// Input is what a report is built from.
type Input struct {
	// Answers are the workload's answers (workload.Answer).
	Answers *workload.Answers
	// Labels are the bin labels of every released column ([BinLabels]).
	Labels [][]string
	// Config is the spec's path, shown on the page; may be empty.
	Config string
	// Privacy is the release's privacy report, nil when none was found;
	// PrivacySource is where it was read from.
	Privacy       *dp.Report
	PrivacySource string
	// Tables is the score of a tables release (score.EvaluateTables), nil
	// for a flat release.
	Tables *score.TablesScore
}

// Summary is summary.json: the report's numbers. It is computed from the
// private data: INTERNAL, never published.
type Summary struct {
	// Format is [Format].
	Format string `json:"format"`
	// Label is [workload.InternalLabel].
	Label         string `json:"label"`
	Config        string `json:"config,omitempty"`
	Synthetic     string `json:"synthetic"`
	TrueRows      int64  `json:"true_join_rows"`
	SyntheticRows int64  `json:"synthetic_rows"`
	// Privacy is the release's privacy parameters; nil when no privacy
	// report was found beside the synthetic file.
	Privacy *Privacy `json:"privacy"`
	// Headline has one score per workload kind present, in the order
	// marginal, ranges, sum.
	Headline []Headline `json:"headline"`
	// Families are the workload's families in workload order.
	Families []Family `json:"families"`
	// Tables is the score of a tables release (per-table marginals,
	// fan-outs, group queries); omitted for a flat release.
	Tables *score.TablesScore `json:"tables,omitempty"`
}

// Privacy is the part of a release's privacy report the page shows.
type Privacy struct {
	// Source is the privacy report's path.
	Source          string    `json:"source"`
	Epsilon         float64   `json:"epsilon"`
	Delta           float64   `json:"delta"`
	Spent           dp.Budget `json:"spent"`
	Mechanism       string    `json:"mechanism"`
	Neighbours      string    `json:"neighbours"`
	Privacy         string    `json:"privacy"`
	CreatedAt       string    `json:"created_at,omitempty"`
	SoftwareVersion string    `json:"software_version,omitempty"`
}

// Headline is the score of one workload kind: the synthetic file's and the
// uniform distribution's (same row count), lower is better.
type Headline struct {
	Kind      string  `json:"kind"`
	Metric    string  `json:"metric"`
	Families  int     `json:"families"`
	Queries   int     `json:"queries"`
	Synthetic float64 `json:"synthetic"`
	Uniform   float64 `json:"uniform"`
	// RatioToUniform is Synthetic / Uniform, omitted when Uniform is 0:
	// near 1 (or above) the synthetic file keeps no more of this kind of
	// statistic than the uniform distribution does.
	RatioToUniform *float64 `json:"ratio_to_uniform,omitempty"`
}

// Family holds the numbers of one workload family.
type Family struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Columns are the released columns' names (for ranges: the by-columns,
	// then the range column).
	Columns []string `json:"columns,omitempty"`
	Queries int      `json:"queries"`
	// Score and UniformScore are the kind's headline metric on this
	// family alone.
	Score        float64             `json:"score"`
	UniformScore float64             `json:"uniform_score"`
	Absolute     workload.ErrorStats `json:"absolute"`
	Relative     workload.ErrorStats `json:"relative"`
	// TrueValue, SyntheticValue and UniformValue are a sum's answers.
	TrueValue      *float64 `json:"true_value,omitempty"`
	SyntheticValue *float64 `json:"synthetic_value,omitempty"`
	UniformValue   *float64 `json:"uniform_value,omitempty"`
	// Figure is the family's figure, relative to the report folder.
	Figure string `json:"figure,omitempty"`
}

// ReadPrivacy reads the privacy report of a synthetic file: the one in its
// Parquet key-value metadata (layout.MetadataKey), which belongs to the
// very file, else the privacy-report.json release writes beside it. It
// returns nil and no error when there is neither, with the path looked at;
// a file that is not Parquet, or a report that does not parse, is an error
// naming the file. source names where the report came from.
func ReadPrivacy(synthetic string) (r *dp.Report, source string, err error) {
	meta, ok, err := parquetMetadata(synthetic, layout.MetadataKey)
	if err != nil {
		return nil, synthetic, err
	}
	if ok {
		r = &dp.Report{}
		if err := json.Unmarshal([]byte(meta), r); err != nil {
			return nil, synthetic, fmt.Errorf("report: %s: Parquet metadata %s: %w", synthetic, layout.MetadataKey, err)
		}
		return r, synthetic + " (Parquet metadata " + layout.MetadataKey + ")", nil
	}
	path := filepath.Join(filepath.Dir(synthetic), layout.ReportName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("report: privacy report: %w", err)
	}
	r = &dp.Report{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, path, fmt.Errorf("report: privacy report %s: %w", path, err)
	}
	return r, path, nil
}

// parquetMetadata looks key up in the key-value metadata of the Parquet
// file at path. A missing file is not an error (ok is false).
func parquetMetadata(path, key string) (value string, ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("report: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("report: %w", err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return "", false, fmt.Errorf("report: %s is not a Parquet file: %w", path, err)
	}
	value, ok = pf.Lookup(key)
	return value, ok, nil
}

// Summarize computes the report's numbers from in. It draws nothing and
// writes nothing; [Write] adds the figures' paths.
func Summarize(in Input) (*Summary, error) {
	a := in.Answers
	if a == nil {
		return nil, errors.New("report: no answers")
	}
	s := &Summary{
		Format: Format, Label: workload.InternalLabel, Config: in.Config, Synthetic: a.Synthetic,
		TrueRows: a.TrueRows, SyntheticRows: a.SyntheticRows, Headline: []Headline{}, Families: []Family{}, Tables: in.Tables,
	}
	if p := in.Privacy; p != nil {
		s.Privacy = &Privacy{
			Source: in.PrivacySource, Epsilon: p.Epsilon, Delta: p.Delta, Spent: p.Spent, Mechanism: p.Mechanism,
			Neighbours: p.Neighbours, Privacy: p.Privacy, CreatedAt: p.CreatedAt, SoftwareVersion: p.SoftwareVersion,
		}
	}
	type acc struct {
		families, queries int
		syn, uni          float64 // sums of the per-query (ranges) or per-family scores
	}
	kinds := map[string]*acc{}
	ev := a.Evaluation() // the error statistics evaluate prints
	for i, f := range a.Families {
		if len(f.True) != len(f.Synthetic) || len(f.True) != len(f.Uniform) {
			return nil, fmt.Errorf("report: family %s: %d true, %d synthetic and %d uniform answers", f.Name, len(f.True), len(f.Synthetic), len(f.Uniform))
		}
		fam := Family{Name: f.Name, Kind: f.Kind, Queries: len(f.True), Absolute: ev.Families[i].Absolute, Relative: ev.Families[i].Relative}
		for _, c := range f.Columns {
			fam.Columns = append(fam.Columns, a.Names[c])
		}
		k := kinds[f.Kind]
		if k == nil {
			k = &acc{}
			kinds[f.Kind] = k
		}
		k.families++
		k.queries += len(f.True)
		switch f.Kind {
		case "marginal":
			fam.Score = tvd(f.True, f.Synthetic)
			fam.UniformScore = tvd(f.True, f.Uniform)
			k.syn += fam.Score
			k.uni += fam.UniformScore
		case "ranges":
			n := math.Max(float64(a.TrueRows), 1)
			var es, eu float64
			for i, t := range f.True {
				es += math.Abs(f.Synthetic[i]-t) / n
				eu += math.Abs(f.Uniform[i]-t) / n
			}
			k.syn += es
			k.uni += eu
			if len(f.True) > 0 {
				fam.Score, fam.UniformScore = es/float64(len(f.True)), eu/float64(len(f.True))
			}
		case "sum":
			if len(f.True) != 1 {
				return nil, fmt.Errorf("report: sum %s: %d answers, want 1", f.Name, len(f.True))
			}
			t, sy, u := f.True[0], f.Synthetic[0], f.Uniform[0]
			fam.TrueValue, fam.SyntheticValue, fam.UniformValue = &t, &sy, &u
			fam.Score = math.Abs(sy-t) / math.Max(math.Abs(t), 1)
			fam.UniformScore = math.Abs(u-t) / math.Max(math.Abs(t), 1)
			k.syn += fam.Score
			k.uni += fam.UniformScore
		default:
			return nil, fmt.Errorf("report: family %s: unknown kind %q", f.Name, f.Kind)
		}
		s.Families = append(s.Families, fam)
	}
	for _, kind := range []struct{ name, metric string }{{"marginal", MetricTVD}, {"ranges", MetricRangeError}, {"sum", MetricSumError}} {
		k := kinds[kind.name]
		if k == nil {
			continue
		}
		// Ranges average over queries, marginals and sums over families.
		d := float64(k.families)
		if kind.name == "ranges" {
			d = math.Max(float64(k.queries), 1)
		}
		h := Headline{Kind: kind.name, Metric: kind.metric, Families: k.families, Queries: k.queries, Synthetic: k.syn / d, Uniform: k.uni / d}
		if h.Uniform > 0 {
			r := h.Synthetic / h.Uniform
			h.RatioToUniform = &r
		}
		s.Headline = append(s.Headline, h)
	}
	return s, nil
}

// shares returns v divided by its sum (all zeros when the sum is 0).
func shares(v []float64) []float64 {
	var t float64
	for _, x := range v {
		t += x
	}
	out := make([]float64, len(v))
	if t > 0 {
		for i, x := range v {
			out[i] = x / t
		}
	}
	return out
}

// tvd is the total-variation distance of the shares of p and q.
func tvd(p, q []float64) float64 {
	ps, qs := shares(p), shares(q)
	var d float64
	for i := range ps {
		d += math.Abs(ps[i] - qs[i])
	}
	return d / 2
}
