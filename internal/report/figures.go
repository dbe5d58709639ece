package report

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Figure sizes and colours.
var (
	figWidth  = 16 * vg.Centimeter
	figHeight = 9 * vg.Centimeter

	trueColor      = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff} // blue
	syntheticColor = color.RGBA{R: 0xdd, G: 0x84, B: 0x52, A: 0xff} // orange
	uniformColor   = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff} // grey
)

// maxTickLabels is how many category labels an axis shows at most; with
// more bins every k-th is labelled.
const maxTickLabels = 24

// pngEncoder trades a little size for speed (compressing dominates the
// rendering time at the default level) and reuses its buffers.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngPool{}}

// pngPool is a png.EncoderBufferPool over a sync.Pool: safe for the
// concurrent renderers of [Write].
type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}

func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

// encode returns the canvas as a PNG.
func encode(c *vgimg.Canvas) ([]byte, error) {
	var buf bytes.Buffer
	if err := pngEncoder.Encode(&buf, c.Image()); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return buf.Bytes(), nil
}

// render draws p on a canvas of the given size and returns it as a PNG.
func render(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c := vgimg.New(w, h)
	p.Draw(draw.New(c))
	return encode(c)
}

// thin returns labels with at most maxTickLabels of them kept, evenly
// spaced; the others are blanked.
func thin(labels []string) []string {
	out := append([]string(nil), labels...)
	if len(out) <= maxTickLabels {
		return out
	}
	k := (len(out) + maxTickLabels - 1) / maxTickLabels
	for i := range out {
		if i%k != 0 {
			out[i] = ""
		}
	}
	return out
}

// slant turns the x tick labels when they would collide.
func slant(p *plot.Plot, labels []string) {
	long := 0
	for _, l := range labels {
		long = max(long, len([]rune(l)))
	}
	if len(labels)*max(long, 2) > 60 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
}

// barsFigure draws a 1-way marginal: the true and synthetic shares of every
// bin, side by side.
func barsFigure(title, column string, labels []string, trueShares, synShares []float64) ([]byte, error) {
	if len(labels) != len(trueShares) || len(labels) != len(synShares) {
		return nil, fmt.Errorf("report: %s: %d labels for %d and %d bins", title, len(labels), len(trueShares), len(synShares))
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = column
	p.Y.Label.Text = "share of rows"
	// Two bars per bin in about 80% of the plotting width.
	w := vg.Length(float64(figWidth-2*vg.Centimeter) / float64(max(len(labels), 1)) * 0.4)
	w = min(w, vg.Points(20))
	bt, err := plotter.NewBarChart(plotter.Values(trueShares), w)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", title, err)
	}
	bt.Color, bt.LineStyle.Width, bt.Offset = trueColor, 0, -w/2
	bs, err := plotter.NewBarChart(plotter.Values(synShares), w)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", title, err)
	}
	bs.Color, bs.LineStyle.Width, bs.Offset = syntheticColor, 0, w/2
	p.Add(bt, bs)
	p.Legend.Add("true", bt)
	p.Legend.Add("synthetic", bs)
	p.Legend.Top = true
	// Headroom for the legend above the tallest bar.
	top := 0.0
	for i := range trueShares {
		top = math.Max(top, math.Max(trueShares[i], synShares[i]))
	}
	p.Y.Min, p.Y.Max = 0, math.Max(top, 1e-9)*1.3
	shown := thin(labels)
	p.NominalX(shown...)
	slant(p, shown)
	return render(p, figWidth, figHeight)
}

// grid is a heat map's data: z[r][c] at x = c, y = r.
type grid struct{ z [][]float64 }

func (g grid) Dims() (c, r int)   { return len(g.z[0]), len(g.z) }
func (g grid) Z(c, r int) float64 { return g.z[r][c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

// heatFigure draws a 2-way marginal's difference synthetic − true share
// (z[r][c] for x bin c and y bin r) on a diverging scale symmetric about
// 0, with a colour legend.
func heatFigure(title, xname, yname string, xl, yl []string, z [][]float64) ([]byte, error) {
	if len(z) != len(yl) || len(z) == 0 || len(z[0]) != len(xl) || len(xl) == 0 {
		return nil, fmt.Errorf("report: %s: a grid of %d rows for %d×%d labels", title, len(z), len(yl), len(xl))
	}
	m := 0.0
	for _, row := range z {
		for _, v := range row {
			m = math.Max(m, math.Abs(v))
		}
	}
	if m == 0 {
		m = 1e-9 // a perfect match: the scale needs a width
	}
	cm := moreland.SmoothBlueRed()
	cm.SetMax(m)
	cm.SetMin(-m)
	pal := cm.Palette(64)
	h := plotter.NewHeatMap(grid{z}, pal)
	h.Min, h.Max = -m, m
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xname
	p.Y.Label.Text = yname
	p.Add(h)
	xs, ys := thin(xl), thin(yl)
	p.NominalX(xs...)
	p.NominalY(ys...)
	slant(p, xs)

	// The legend: the palette from −m (blue, synthetic too low) to +m
	// (red, synthetic too high), at the right of the plot.
	l := plot.NewLegend()
	thumbs := plotter.PaletteThumbnailers(cm.Palette(15))
	for i := len(thumbs) - 1; i >= 0; i-- {
		label := ""
		switch i {
		case len(thumbs) - 1:
			label = fmt.Sprintf("+%.2g", m)
		case len(thumbs) / 2:
			label = "0"
		case 0:
			label = fmt.Sprintf("−%.2g", m)
		}
		l.Add(label, thumbs[i])
	}
	l.ThumbnailWidth = vg.Points(10)
	l.TextStyle.Font.Size = vg.Points(7)
	l.Padding = 0
	l.Top = true
	img := vgimg.New(figWidth, figHeight)
	dc := draw.New(img)
	r := l.Rectangle(dc)
	l.YOffs = -p.Title.TextStyle.FontExtents().Height
	l.Draw(dc)
	p.Draw(draw.Crop(dc, 0, -(r.Max.X-r.Min.X)-vg.Millimeter, 0, 0))
	return encode(img)
}

// boxFigure draws one horizontal box plot per family (Tukey's style:
// box at the quartiles, whiskers to the last values within 1.5 IQR, the
// rest as points) on a log axis; errors below floor (zeros) are drawn at
// floor.
func boxFigure(title, xlabel string, names []string, values [][]float64, floor float64) ([]byte, error) {
	if len(names) != len(values) || len(names) == 0 {
		return nil, fmt.Errorf("report: %s: %d names for %d families", title, len(names), len(values))
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	w := vg.Points(10)
	hi := floor * 10
	for i, raw := range values {
		if len(raw) == 0 {
			continue
		}
		v := make([]float64, len(raw))
		for k, x := range raw {
			v[k] = math.Max(x, floor)
			hi = math.Max(hi, v[k])
		}
		// The first family on top.
		b, err := plotter.NewBoxPlot(w, float64(len(values)-1-i), plotter.Values(v))
		if err != nil {
			return nil, fmt.Errorf("report: %s: %s: %w", title, names[i], err)
		}
		b.Horizontal = true
		b.FillColor = color.NRGBA{R: 0xdd, G: 0x84, B: 0x52, A: 0x80}
		b.GlyphStyle.Radius = vg.Points(1.5)
		p.Add(b)
	}
	rev := make([]string, len(names))
	for i, n := range names {
		rev[len(names)-1-i] = n
	}
	p.NominalY(rev...)
	p.X.Min, p.X.Max = floor/2, hi*2
	h := max(figHeight, vg.Length(len(names))*0.55*vg.Centimeter+3*vg.Centimeter)
	return render(p, figWidth, h)
}

// sumPoint is a numeric sum's true value and errors.
type sumPoint struct{ truth, synErr, uniErr float64 }

// errNoPositive is returned by scatterFigure when no point can be drawn
// on log axes.
var errNoPositive = errors.New("report: no sum with a positive true value and error")

// scatterFigure draws each numeric sum's |error| against |true value| on
// log axes, the synthetic file's and the uniform distribution's. Points
// with a zero coordinate cannot be drawn on log axes and are left out;
// skipped says how many.
func scatterFigure(pts []sumPoint) (fig []byte, skipped int, err error) {
	var syn, uni plotter.XYs
	lo, hi := math.Inf(1), math.Inf(-1)
	add := func(xy *plotter.XYs, x, y float64) {
		if x > 0 && y > 0 {
			*xy = append(*xy, plotter.XY{X: x, Y: y})
			lo, hi = math.Min(lo, math.Min(x, y)), math.Max(hi, math.Max(x, y))
		} else {
			skipped++
		}
	}
	for _, pt := range pts {
		add(&syn, math.Abs(pt.truth), pt.synErr)
		add(&uni, math.Abs(pt.truth), pt.uniErr)
	}
	if len(syn)+len(uni) == 0 {
		return nil, skipped, errNoPositive
	}
	p := plot.New()
	p.Title.Text = "Numeric sums: |error| vs |true value|"
	p.X.Label.Text = "|true value|"
	p.Y.Label.Text = "|synthetic − true|"
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Scale = plot.LogScale{}
		ax.Tick.Marker = plot.LogTicks{Prec: -1}
		ax.Min, ax.Max = lo/2, hi*2
	}
	// The diagonal: an error as large as the value itself.
	diag, err := plotter.NewLine(plotter.XYs{{X: lo / 2, Y: lo / 2}, {X: hi * 2, Y: hi * 2}})
	if err != nil {
		return nil, skipped, fmt.Errorf("report: %w", err)
	}
	diag.LineStyle.Color = uniformColor
	diag.LineStyle.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(plotter.NewGrid(), diag)
	p.Legend.Add("error = value", diag)
	for _, s := range []struct {
		xy    plotter.XYs
		name  string
		c     color.Color
		shape draw.GlyphDrawer
	}{{uni, "uniform", uniformColor, draw.RingGlyph{}}, {syn, "synthetic", syntheticColor, draw.CircleGlyph{}}} {
		if len(s.xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.xy)
		if err != nil {
			return nil, skipped, fmt.Errorf("report: %w", err)
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = s.c, s.shape, vg.Points(3.5)
		p.Add(sc)
		p.Legend.Add(s.name, sc)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	fig, err = render(p, figWidth, figHeight)
	return fig, skipped, err
}
