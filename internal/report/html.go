package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"strconv"
)

// page is what the HTML template reads.
type page struct {
	*Summary
	Sections []pageSection
}

type pageSection struct {
	Title   string
	Figures []pageFigure
}

type pageFigure struct {
	Title, Caption, File string
	// Src is the img element's src attribute: the PNG as a data URI.
	Src template.HTMLAttr
}

// renderHTML renders index.html: one self-contained page, inline CSS, the
// figures as PNG data URIs (each linking to its file under fig/), no
// script and nothing fetched from the network.
func renderHTML(s *Summary, figs []*figure) ([]byte, error) {
	p := page{Summary: s}
	for _, sec := range sections {
		ps := pageSection{Title: sec}
		for _, f := range figs {
			if f.Section != sec {
				continue
			}
			ps.Figures = append(ps.Figures, pageFigure{
				Title: f.Title, Caption: f.Caption, File: FigDir + "/" + f.Name,
				// The base64 alphabet (A–Z a–z 0–9 + / =) holds no quote,
				// angle bracket or ampersand, so the attribute is safe as
				// written; as a template.URL it would be escaped to valid
				// but bloated HTML (every + as &#43;).
				Src: template.HTMLAttr(`src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(f.PNG) + `"`),
			})
		}
		if len(ps.Figures) > 0 {
			p.Sections = append(p.Sections, ps)
		}
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("report: index.html: %w", err)
	}
	return buf.Bytes(), nil
}

// num formats a score or error for the page: 4 significant digits, and
// large values whole (14013, not 1.401e+04).
func num(x float64) string {
	if math.Abs(x) >= 1000 && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// Grades of a score against the uniform floor: at most gradeGood of it is
// good, at least gradeBad of it no better than uniform.
const (
	gradeGood = 0.5
	gradeBad  = 0.9
)

// grade returns the CSS class of a score syn against the uniform score
// uni: "better" (at most half of it), "worse" (90% of it or more: the
// synthetic file keeps about as little as the uniform distribution) or "".
func grade(syn, uni float64) string {
	switch {
	case uni <= 0 && syn <= 0:
		return "better"
	case uni <= 0:
		return "worse"
	case syn/uni <= gradeGood:
		return "better"
	case syn/uni >= gradeBad:
		return "worse"
	}
	return ""
}

// verdict says in words what grade says in colour.
func verdict(syn, uni float64) string {
	switch grade(syn, uni) {
	case "better":
		return "kept"
	case "worse":
		return "no better than uniform"
	}
	return "partly kept"
}

// ptr formats an optional number.
func ptr(x *float64) string {
	if x == nil {
		return ""
	}
	return num(*x)
}

var pageTemplate = template.Must(template.New("index.html").Funcs(template.FuncMap{"num": num, "ptr": ptr, "grade": grade, "verdict": verdict}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="robots" content="noindex, nofollow">
<title>INTERNAL — synth utility report</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 70rem; padding: 0 1rem 3rem; color: #222; }
.internal { background: #b00020; color: #fff; padding: .8rem 1rem; font-weight: bold; font-size: 1.1rem; position: sticky; top: 0; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
.better { color: #1b5e20; } .worse { color: #b00020; font-weight: bold; }
figure { display: inline-block; margin: .5rem; vertical-align: top; max-width: 100%; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: .85rem; max-width: 36rem; }
.note { font-size: .9rem; color: #555; }
</style>
</head>
<body>
<div class="internal">INTERNAL — contains statistics of the private data, do not publish. Not differentially private.</div>
<h1>Utility report of a synthetic release</h1>
<p class="note">{{.Label}}</p>
<table>
<tr><th class="l">synthetic file</th><td class="l">{{.Synthetic}}</td></tr>
{{if .Config}}<tr><th class="l">spec</th><td class="l">{{.Config}}</td></tr>{{end}}
<tr><th class="l">rows</th><td class="l">{{.SyntheticRows}} synthetic, {{.TrueRows}} in the true join</td></tr>
</table>

<h2>Privacy of the release</h2>
{{with .Privacy}}<table>
<tr><th class="l">budget (ε, δ)</th><td class="l">ε = {{.Epsilon}}, δ = {{.Delta}} (spent: ε = {{num .Spent.Epsilon}}, δ = {{num .Spent.Delta}})</td></tr>
<tr><th class="l">mechanism</th><td class="l">{{.Mechanism}}</td></tr>
<tr><th class="l">privacy</th><td class="l">{{.Privacy}}</td></tr>
<tr><th class="l">neighbours</th><td class="l">{{.Neighbours}}</td></tr>
{{if .CreatedAt}}<tr><th class="l">released</th><td class="l">{{.CreatedAt}}{{if .SoftwareVersion}} by synth {{.SoftwareVersion}}{{end}}</td></tr>{{end}}
<tr><th class="l">from</th><td class="l">{{.Source}}</td></tr>
</table>{{else}}<p class="worse">No privacy report was found in the synthetic file's metadata or beside it: its privacy parameters are unknown.</p>{{end}}

<h2>Headline</h2>
<p class="note">Lower is better. The uniform distribution with the same number of rows is the floor a useless release would reach: a score near it means the synthetic file keeps little of that kind of statistic. Verdict: kept at most half the uniform score, no better than uniform at 90% of it or more.</p>
<table>
<tr><th class="l">workload kind</th><th class="l">metric</th><th>families</th><th>queries</th><th>synthetic</th><th>uniform</th><th>synthetic / uniform</th><th class="l">verdict</th></tr>
{{range .Headline}}<tr><td class="l">{{.Kind}}</td><td class="l">{{.Metric}}</td><td>{{.Families}}</td><td>{{.Queries}}</td><td class="{{grade .Synthetic .Uniform}}">{{num .Synthetic}}</td><td>{{num .Uniform}}</td><td>{{ptr .RatioToUniform}}</td><td class="l {{grade .Synthetic .Uniform}}">{{verdict .Synthetic .Uniform}}</td></tr>
{{end}}</table>

{{with .Tables}}<h2>Tables of the release</h2>
<p class="note">Every 1- and 2-way marginal of each table's released columns, counted over the table's own rows (TVD; lower is better, the uniform distribution's beside it).</p>
<table>
<tr><th class="l">table</th><th>true rows</th><th>rows</th><th>marginals</th><th>mean TVD</th><th>max TVD</th><th>uniform mean TVD</th></tr>
{{range .Tables}}<tr><td class="l">{{.Table}}</td><td>{{.TrueRows}}</td><td>{{.Rows}}</td><td>{{len .Marginals}}</td><td class="{{grade .MeanTVD .MeanUnifTV}}">{{num .MeanTVD}}</td><td>{{num .MaxTVD}}</td><td>{{num .MeanUnifTV}}</td></tr>
{{end}}</table>
<p class="note">Children per parent on every edge of the ownership tree, over every parent (parents without children included), in bins 0, 1, 2–3, 4–7, …</p>
<table>
<tr><th class="l">edge</th><th>true mean</th><th>mean</th><th>TVD</th></tr>
{{range .FanOuts}}<tr><td class="l">{{.Parent}} → {{.Child}}</td><td>{{num .TrueMean}}</td><td>{{num .Mean}}</td><td>{{num .TVD}}</td></tr>
{{end}}</table>
{{if .Siblings}}<p class="note">Siblings: the share of pairs of one parent's children whose column falls in the same bin, in the true and the synthetic tables; random pairs: any two true children, what siblings score when they are no more alike than strangers.</p>
<table>
<tr><th class="l">edge</th><th class="l">column</th><th>true</th><th>synthetic</th><th>random pairs</th></tr>
{{range .Siblings}}<tr><td class="l">{{.Parent}} → {{.Child}}</td><td class="l">{{.Column}}</td><td>{{num .True}}</td><td>{{num .Synthetic}}</td><td>{{num .TrueRandom}}</td></tr>
{{end}}</table>{{end}}
{{with .Groups}}<p class="note">{{.Queries}} group queries (seed {{.Seed}}; docs/relational-eval.md): parents with a fan-out in a range, an attribute in a set and at least k children satisfying a condition. Error |true − synthetic·N/N̂| / max(true, N/100); {{.ZeroTrue}} queries have a true answer of 0.</p>
<table>
<tr><th class="l">edge</th><th>queries</th><th>mean error</th><th>median error</th></tr>
{{range .Edges}}<tr><td class="l">{{.Parent}} → {{.Child}}</td><td>{{.Queries}}</td><td>{{num .Mean}}</td><td>{{num .Median}}</td></tr>
{{end}}<tr><th class="l">all</th><td>{{.Queries}}</td><td>{{num .Mean}}</td><td>{{num .Median}}</td></tr>
</table>{{end}}
{{end}}
{{range .Sections}}<h2>{{.Title}}</h2>
{{range .Figures}}<figure><a href="{{.File}}"><img {{.Src}} alt="{{.Title}}"></a><figcaption>{{.Caption}}</figcaption></figure>
{{end}}{{end}}
<h2>Every family</h2>
<p class="note">Score: the family kind's headline metric on this family alone. Absolute error |synthetic − true|; relative error |synthetic − true| / max(true, 1); max, median and 90th percentile over the family's queries.</p>
<table>
<tr><th class="l">family</th><th class="l">kind</th><th>queries</th><th>score</th><th>uniform</th><th>abs max</th><th>abs median</th><th>abs p90</th><th>rel max</th><th>rel median</th><th>rel p90</th><th>true</th><th>synthetic</th></tr>
{{range .Families}}<tr><td class="l">{{.Name}}</td><td class="l">{{.Kind}}</td><td>{{.Queries}}</td><td class="{{grade .Score .UniformScore}}">{{num .Score}}</td><td>{{num .UniformScore}}</td><td>{{num .Absolute.Max}}</td><td>{{num .Absolute.Median}}</td><td>{{num .Absolute.P90}}</td><td>{{num .Relative.Max}}</td><td>{{num .Relative.Median}}</td><td>{{num .Relative.P90}}</td><td>{{ptr .TrueValue}}</td><td>{{ptr .SyntheticValue}}</td></tr>
{{end}}</table>
<p class="note">The numbers are also in summary.json and the figures in fig/, beside this page.</p>
<div class="internal">INTERNAL — contains statistics of the private data, do not publish.</div>
</body>
</html>
`))
