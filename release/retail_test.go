package release

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/spec"
)

// retailRowsPerCustomer returns the largest and the median number of join
// rows (invoice lines) one customer owns in testdata/retail, computed with
// DuckDB straight from the CSV files (not through engine/). It reads the
// private data: the numbers are for tests and the docs only.
func retailRowsPerCustomer(t testing.TB) (maxRows, median float64) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "retail"))
	if err != nil {
		t.Fatal(err)
	}
	csv := func(name string) string {
		return "read_csv('" + filepath.Join(dir, name) + "', header = true, all_varchar = true)"
	}
	q := `SELECT max(n), median(n) FROM (
		SELECT c.customer_id, count(*) AS n
		FROM ` + csv("customers.csv") + ` c
		JOIN ` + csv("invoices.csv") + ` i ON i.customer_id = c.customer_id
		JOIN ` + csv("lines.csv") + ` l ON l.invoice_no = i.invoice_no
		GROUP BY c.customer_id)`
	if err := db.QueryRow(q).Scan(&maxRows, &median); err != nil {
		t.Fatal(err)
	}
	return maxRows, median
}

// TestRetailUnitRelease releases the retail example (UCI Online Retail,
// customers ⋈ invoices ⋈ lines, unit customers; testdata/retail) at
// ε = 1, δ = 1e-6 with fresh noise, in about a second, and scores it with
// the independent scorer.
//
// The data is what the example is for: one customer owns up to 5,128 of
// the 98,750 join rows while the median customer owns 43
// (testdata/retail/PROVENANCE.md); the test checks both numbers, so a
// change to the files that loses the skew fails here.
//
// The release must beat the uniform distribution by a wide margin: mean
// TVD of the workload marginals at most 0.25, where the uniform
// distribution (and the tuple-level join-as-one release) sits at 0.480.
// Measured over 40 single runs: TVD 0.107 – 0.156 (mean 0.131, standard
// deviation 0.011); 0.25 is ten standard deviations above the mean, so a
// false failure is not a practical concern. The bias of bounding alone
// (r = 1, no noise) is 0.071 (docs/privacy-units.md).
func TestRetailUnitRelease(t *testing.T) {
	maxRows, median := retailRowsPerCustomer(t)
	if maxRows != 5128 || median != 43 {
		t.Fatalf("testdata/retail: a customer owns at most %g join rows, the median %g; PROVENANCE.md says 5128 and 43", maxRows, median)
	}
	r, sum := scoredRelease(t, "retail", 1, dp.NewSource(), nil)
	t.Logf("retail ε = 1: mean TVD %.4f (uniform %.4f), %d rows for %d, mechanism %q",
		r.MeanTVD, r.MeanUniformTVD, sum.Rows, r.TrueRows, sum.Privacy.Mechanism)
	if !strings.HasPrefix(sum.Privacy.Mechanism, "privacy-unit") {
		t.Errorf("mechanism %q, want the privacy-unit release (the example declares privacy.unit: customers)", sum.Privacy.Mechanism)
	}
	if r.MeanTVD > 0.25 {
		t.Errorf("retail with unit customers at ε = 1: mean TVD %.4f, want ≤ 0.25 (uniform %.4f)", r.MeanTVD, r.MeanUniformTVD)
	}
}

// unitJoinRow is one row of a spec's join: its unit's id and the bin of
// every released column.
type unitJoinRow struct {
	unit string
	bins []int
}

// unitJoinRows reads a spec's join from the raw files with DuckDB (as
// internal/score reads it, plus the unit's key), binned by
// spec.Column.Bin, and every unit's number of join rows. Test-only: it
// reads the private data.
func unitJoinRows(t testing.TB, s *spec.Spec) ([]unitJoinRow, map[string]float64) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	quote := func(x string) string { return `"` + strings.ReplaceAll(x, `"`, `""`) + `"` }
	var unitKey string
	var from, where []string
	for _, tb := range s.Tables {
		from = append(from, "read_csv('"+strings.ReplaceAll(tb.Source, "'", "''")+"', header = true, all_varchar = true) AS "+quote(tb.Name))
		if tb.Name == s.Privacy.Unit {
			unitKey = quote(tb.Name) + "." + quote(tb.PrimaryKey[0])
		}
	}
	for _, j := range s.Join {
		where = append(where, quote(j.Left.Table)+"."+quote(j.Left.Column)+" = "+quote(j.Right.Table)+"."+quote(j.Right.Column))
	}
	sel := []string{unitKey}
	for _, c := range s.Release.Columns {
		sel = append(sel, quote(c.Table)+"."+quote(c.Column))
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + strings.Join(from, ", ") + " WHERE " + strings.Join(where, " AND ")
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols := s.ReleaseColumns()
	var join []unitJoinRow
	n := map[string]float64{}
	raw := make([]string, len(sel))
	dst := make([]any, len(sel))
	for i := range raw {
		dst[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			t.Fatal(err)
		}
		rw := unitJoinRow{unit: raw[0], bins: make([]int, len(cols))}
		for i, c := range cols {
			if rw.bins[i], err = c.Bin(raw[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		join = append(join, rw)
		n[rw.unit]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return join, n
}

// boundingBias scores, without any noise, what contribution bounding alone
// does to the spec's workload marginals: the true join weighted as the
// privacy-unit release weighs it (each row of a unit with n_u rows by
// min(1, r/n_u)) against the unweighted join, mean TVD over the workload
// marginals, and the share of the join's rows the weights remove. The join
// is read from the raw files with DuckDB (as internal/score reads it, plus
// the unit's key) and binned by spec.Column.Bin. Test-only: it reads the
// private data.
func boundingBias(t testing.TB, s *spec.Spec, r float64) (bias, removed float64) {
	t.Helper()
	join, n := unitJoinRows(t, s)
	ms, err := score.WorkloadMarginals(s)
	if err != nil {
		t.Fatal(err)
	}
	sizes := s.ReleaseSizes()
	var total float64
	for _, m := range ms {
		cells := 1
		for _, c := range m {
			cells *= sizes[c]
		}
		truth, bounded := make([]float64, cells), make([]float64, cells)
		var wsum float64
		for _, rw := range join {
			k := 0
			for _, c := range m {
				k = k*sizes[c] + rw.bins[c]
			}
			w := min(1, r/n[rw.unit])
			truth[k]++
			bounded[k] += w
			wsum += w
		}
		for k := range truth {
			truth[k] /= float64(len(join))
			bounded[k] /= wsum
		}
		bias += score.TVD(truth, bounded) / float64(len(ms))
		total = wsum
	}
	return bias, 1 - total/float64(len(join))
}

// TestUnitBoundSweep prints, for the examples named in SYNTH_ACCURACY_DATA
// (default retail; each must declare privacy.unit), the mean TVD of the
// workload marginals over 3 seeds (SYNTH_UNIT_SWEEP_SEEDS) for each
// contribution bound r in
// SYNTH_UNIT_SWEEP (comma-separated, e.g. 1,4,16,64,256; auto for
// release.contribution_bound: auto, with the r it chose) at ε = 0.5, 1
// and 4, scored on the released file by the independent scorer, with the
// ratio of the file's rows to the true join size, and, for each r, the
// TVD that bounding alone causes (see boundingBias; L1 bounding).
// SYNTH_UNIT_SWEEP_NORM=l1 or l2 sets release.contribution_norm. It takes
// minutes, so it runs only when SYNTH_UNIT_SWEEP is set; the tables are
// in docs/privacy-units.md.
func TestUnitBoundSweep(t *testing.T) {
	v := os.Getenv("SYNTH_UNIT_SWEEP")
	if v == "" {
		t.Skip("set SYNTH_UNIT_SWEEP=1,4,16,64 to sweep the contribution bound")
	}
	var bounds []float64 // 0: auto
	for _, f := range strings.Split(v, ",") {
		if strings.TrimSpace(f) == "auto" {
			bounds = append(bounds, 0)
			continue
		}
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			t.Fatal(err)
		}
		bounds = append(bounds, r)
	}
	names := []string{"retail"}
	if v := os.Getenv("SYNTH_ACCURACY_DATA"); v != "" {
		names = strings.Split(v, ",")
	}
	seeds := 3
	if v := os.Getenv("SYNTH_UNIT_SWEEP_SEEDS"); v != "" {
		var err error
		if seeds, err = strconv.Atoi(v); err != nil || seeds < 1 {
			t.Fatalf("SYNTH_UNIT_SWEEP_SEEDS=%q: want a number of seeds ≥ 1", v)
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%d seeds\n", seeds)
	out.WriteString("| data | r | ε | synth TVD (mean of seeds) | rows / true | uniform TVD |\n| --- | --- | --- | --- | --- | --- |\n")
	var biases strings.Builder
	biases.WriteString("| data | r | bias TVD (bounding alone, no noise) | share of rows removed |\n| --- | --- | --- | --- |\n")
	for _, name := range names {
		s := exampleSpec(t, name)
		if s.Privacy.Unit == "" {
			t.Fatalf("%s declares no privacy.unit: nothing to sweep", name)
		}
		for _, r := range bounds {
			label := fmt.Sprint(r)
			if r == 0 {
				label = "auto"
			} else {
				bias, removed := boundingBias(t, s, r)
				fmt.Fprintf(&biases, "| %s | %g | %.4f | %.3f |\n", name, r, bias, removed)
			}
			for _, eps := range []float64{0.5, 1, 4} {
				var tvd, uni, ratio float64
				var chosen []string
				for seed := uint64(1); seed <= uint64(seeds); seed++ {
					res, sum := scoredRelease(t, name, eps, dp.NewSeededSource(seed), func(o *Options) {
						o.Spec.Release.ContributionBound = r
						o.Spec.Release.ContributionBoundAuto = r == 0
						if n := os.Getenv("SYNTH_UNIT_SWEEP_NORM"); n != "" {
							o.Spec.Release.ContributionNorm = spec.Norm(n) // l1 or l2
						}
					})
					tvd += res.MeanTVD / float64(seeds)
					uni = res.MeanUniformTVD
					ratio += float64(res.Rows) / float64(res.TrueRows) / float64(seeds)
					chosen = append(chosen, fmt.Sprint(sum.Privacy.Parameters["contribution_bound"]))
				}
				if r == 0 {
					label = "auto (" + strings.Join(chosen, ", ") + ")"
				}
				fmt.Fprintf(&out, "| %s | %s | %g | %.4f | %.2f | %.3f |\n", name, label, eps, tvd, ratio, uni)
				t.Logf("%s r=%s ε=%g: TVD %.4f (uniform %.3f)", name, label, eps, tvd, uni)
			}
		}
	}
	fmt.Println(out.String())
	fmt.Println(biases.String())
}
