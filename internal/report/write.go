package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/synth-dp/synth/workload"
	"golang.org/x/sync/errgroup"
)

// File names inside a report folder.
const (
	IndexName   = "index.html"
	SummaryName = "summary.json"
	FigDir      = "fig"
)

// figure is one rendered figure of the report.
type figure struct {
	// Name is the file name under FigDir; Title and Caption go on the page.
	Name, Title, Caption string
	// Section groups figures on the page.
	Section string
	PNG     []byte
	render  func() ([]byte, error)
}

// The page's sections, in page order.
const (
	sectionErrors = "Errors per workload family"
	sectionSums   = "Numeric sums"
	sectionOneWay = "1-way marginals: true vs synthetic"
	sectionTwoWay = "2-way marginals: synthetic − true"
)

// The box plots' log axes draw smaller errors (zeros) at these floors:
// half a row for absolute errors, 10⁻⁴ for relative ones.
const (
	absFloor = 0.5
	relFloor = 1e-4
)

// sections are the page's sections in page order.
var sections = []string{sectionErrors, sectionSums, sectionOneWay, sectionTwoWay}

// Options tune [Write]; the zero value is the default.
type Options struct {
	// Progress, when set, is called after each figure is rendered with the
	// number done and the total, from one goroutine at a time.
	Progress func(done, total int)
}

// Write builds the report of in and publishes it as the folder dir (see
// the package documentation): summary.json, fig/*.png and index.html. dir
// may not exist yet, may be empty, or may hold an earlier report, which is
// replaced; anything else is refused with an error wrapping
// [ErrNotReport], before any figure is drawn. A symbolic link at dir is
// followed. On error or cancellation dir is left as it was. It returns the
// summary written.
func Write(ctx context.Context, dir string, in Input, o Options) (*Summary, error) {
	dir = filepath.Clean(dir)
	// A symbolic link is followed: the report replaces the folder it
	// points to, as a release does.
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
	}
	if err := Check(dir); err != nil {
		return nil, err
	}
	sum, err := Summarize(in)
	if err != nil {
		return nil, err
	}
	figs, err := plan(in, sum)
	if err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	var (
		mu   sync.Mutex
		done int
	)
	for _, f := range figs {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			b, err := f.render()
			if err != nil {
				return err
			}
			f.PNG = b
			if o.Progress != nil {
				mu.Lock()
				done++
				o.Progress(done, len(figs))
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	page, err := renderHTML(sum, figs)
	if err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report: summary: %w", err)
	}
	files := map[string][]byte{SummaryName: append(js, '\n'), IndexName: page}
	for _, f := range figs {
		files[filepath.Join(FigDir, f.Name)] = f.PNG
	}
	if err := publish(ctx, dir, files); err != nil {
		return nil, err
	}
	return sum, nil
}

// plan lists the report's figures and fills the summary's figure paths.
func plan(in Input, sum *Summary) ([]*figure, error) {
	a := in.Answers
	if len(in.Labels) != len(a.Names) {
		return nil, fmt.Errorf("report: %d columns of bin labels for %d released columns", len(in.Labels), len(a.Names))
	}
	for j, l := range in.Labels {
		if len(l) != a.Sizes[j] {
			return nil, fmt.Errorf("report: column %s: %d bin labels for %d bins", a.Names[j], len(l), a.Sizes[j])
		}
	}
	var figs []*figure
	var names []string
	var absErr, relErr [][]float64
	var sums []sumPoint
	for i, f := range a.Families {
		abs, rel := workload.Errors(f.True, f.Synthetic)
		names = append(names, f.Name)
		absErr, relErr = append(absErr, abs), append(relErr, rel)
		fam := &sum.Families[i]
		file := fmt.Sprintf("%02d-%s.png", i+1, slug(f.Name))
		switch {
		case f.Kind == "sum":
			sums = append(sums, sumPoint{truth: f.True[0], synErr: abs[0], uniErr: math.Abs(f.Uniform[0] - f.True[0])})
		case f.Kind == "marginal" && len(f.Columns) == 1:
			c := f.Columns[0]
			ts, ss := shares(f.True), shares(f.Synthetic)
			fam.Figure = FigDir + "/" + file
			figs = append(figs, &figure{
				Name: file, Title: f.Name, Section: sectionOneWay,
				Caption: fmt.Sprintf("Share of rows per bin of %s; TVD %.4f (uniform %.4f).", a.Names[c], fam.Score, fam.UniformScore),
				render: func() ([]byte, error) {
					return barsFigure(f.Name, a.Names[c], in.Labels[c], ts, ss)
				},
			})
		case f.Kind == "marginal" && len(f.Columns) == 2:
			cy, cx := f.Columns[0], f.Columns[1]
			ts, ss := shares(f.True), shares(f.Synthetic)
			nx := a.Sizes[cx]
			z := make([][]float64, a.Sizes[cy])
			for r := range z {
				z[r] = make([]float64, nx)
				for c := range z[r] {
					z[r][c] = ss[r*nx+c] - ts[r*nx+c]
				}
			}
			fam.Figure = FigDir + "/" + file
			figs = append(figs, &figure{
				Name: file, Title: f.Name, Section: sectionTwoWay,
				Caption: fmt.Sprintf("Synthetic minus true share of rows per cell (red: too many synthetic rows, blue: too few); TVD %.4f (uniform %.4f).",
					fam.Score, fam.UniformScore),
				render: func() ([]byte, error) {
					return heatFigure(f.Name+": synthetic − true share", a.Names[cx], a.Names[cy], in.Labels[cx], in.Labels[cy], z)
				},
			})
		}
	}
	if len(names) > 0 {
		figs = append(figs,
			&figure{Name: "errors-absolute.png", Title: "Absolute errors", Section: sectionErrors,
				Caption: fmt.Sprintf("|synthetic − true| of every query (marginal cell, range, sum) per family, log axis; errors below %g (zeros) are drawn at %g.", absFloor, absFloor),
				render: func() ([]byte, error) {
					return boxFigure("Absolute error per family", "|synthetic − true|", names, absErr, absFloor)
				}},
			&figure{Name: "errors-relative.png", Title: "Relative errors", Section: sectionErrors,
				Caption: fmt.Sprintf("|synthetic − true| / max(true, 1) of every query per family (the relative error evaluate prints), log axis; errors below %g (zeros) are drawn at %g.", relFloor, relFloor),
				render: func() ([]byte, error) {
					return boxFigure("Relative error per family", "|synthetic − true| / max(true, 1)", names, relErr, relFloor)
				}})
	}
	if len(sums) > 0 {
		fig := &figure{Name: "sums.png", Title: "Numeric sums", Section: sectionSums}
		// Render once here to know whether anything can be drawn; it is
		// one small figure.
		b, skipped, err := scatterFigure(sums)
		switch {
		case errors.Is(err, errNoPositive):
			fig = nil
		case err != nil:
			return nil, err
		default:
			fig.Caption = "Each numeric sum's |error| against its |true value|, log axes; grey rings: the uniform distribution's error."
			if skipped > 0 {
				fig.Caption += fmt.Sprintf(" %d point(s) with a zero coordinate cannot be drawn on log axes and are left out.", skipped)
			}
			fig.render = func() ([]byte, error) { return b, nil }
		}
		if fig != nil {
			figs = append(figs, fig)
		}
	}
	return figs, nil
}

// slug turns a family name into a file name part.
func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimSuffix(b.String(), "-")
	if len(s) > 60 {
		s = strings.TrimSuffix(s[:60], "-")
	}
	return s
}

// isReportFolder reports whether dir holds an earlier report (a
// summary.json of this [Format], and nothing but report files: index.html
// and PNG files under fig/) or is empty.
func isReportFolder(dir string) (report, empty bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, false, err
	}
	if len(entries) == 0 {
		return false, true, nil
	}
	for _, e := range entries {
		switch e.Name() {
		case SummaryName, IndexName:
		case FigDir:
			// Only figures: a file of somebody else's would be deleted.
			figs, err := os.ReadDir(filepath.Join(dir, FigDir))
			if err != nil {
				return false, false, nil
			}
			for _, f := range figs {
				if !f.Type().IsRegular() || filepath.Ext(f.Name()) != ".png" {
					return false, false, nil
				}
			}
		default:
			return false, false, nil
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, SummaryName))
	if err != nil {
		return false, false, nil
	}
	var head struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(data, &head) != nil || head.Format != Format {
		return false, false, nil
	}
	return true, false, nil
}

// Check reports whether dir may receive a report: it does not exist, is
// an empty folder or holds an earlier report. Otherwise the error wraps
// [ErrNotReport]. [Write] checks the same, before drawing and again before
// publishing; a caller checks first to refuse before reading any data.
func Check(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is a file", ErrNotReport, dir)
	}
	rep, empty, err := isReportFolder(dir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if !rep && !empty {
		return fmt.Errorf("%w: %s holds other files (a report replaces the whole folder): give a new or empty folder, or one holding an earlier report", ErrNotReport, dir)
	}
	return nil
}

// publish writes files (paths relative to the report folder) into a fresh
// staging folder beside dir, syncs them, and renames the folder to dir. A
// previous report at dir is first moved aside under a temporary name and
// removed once the new one is in place; an empty folder is removed. On
// any error the staging folder is removed and dir is as it was (but for a
// crash between the two renames, which leaves the old report under its
// temporary name beside dir).
func publish(ctx context.Context, dir string, files map[string][]byte) (err error) {
	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	if base == "" || base == "." || base == ".." {
		return fmt.Errorf("report: folder %q: give a folder name", dir)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	stage, err := os.MkdirTemp(parent, "."+base+".report-*")
	if err != nil {
		return fmt.Errorf("report: folder %s is not writable: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(stage)
		}
	}()
	if err := os.Mkdir(filepath.Join(stage, FigDir), 0o700); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for name, data := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeSynced(filepath.Join(stage, name), data); err != nil {
			return err
		}
	}
	syncDir(filepath.Join(stage, FigDir))
	syncDir(stage)
	// Check again: the folder may have changed while the figures rendered.
	if err := Check(dir); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var old string
	if _, serr := os.Stat(dir); serr == nil {
		if _, empty, _ := isReportFolder(dir); empty {
			if err := os.Remove(dir); err != nil {
				return fmt.Errorf("report: %w", err)
			}
		} else {
			old = stage + ".old"
			if err := os.Rename(dir, old); err != nil {
				return fmt.Errorf("report: moving the previous report aside: %w", err)
			}
		}
	}
	if err := os.Rename(stage, dir); err != nil {
		if old != "" {
			if rerr := os.Rename(old, dir); rerr != nil {
				return fmt.Errorf("report: %w (and the previous report stays at %s: %v)", err, old, rerr)
			}
		}
		return fmt.Errorf("report: %w", err)
	}
	syncDir(parent)
	if old != "" {
		os.RemoveAll(old) // the new report is in place; a leftover is only clutter
	}
	return nil
}

// writeSynced writes data to a new file readable by its owner only and
// syncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	return nil
}

// syncDir makes a folder's entries durable; errors are ignored (some file
// systems do not support it).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
