package relational

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// loadKeyPair writes a(k, x) with the given keys and b(k) holding 20 each
// of "7", "07" and "007", and loads them. a's keys decide the engine's
// storage of a.k: BIGINT when all are canonical integers, text otherwise.
func loadKeyPair(t *testing.T, aKeys []string) (*engine.Engine, *spec.Spec) {
	t.Helper()
	dir := t.TempDir()
	var a, b strings.Builder
	a.WriteString("k,x\n")
	for _, k := range aKeys {
		fmt.Fprintf(&a, "%s,1\n", k)
	}
	b.WriteString("k\n")
	for _, k := range []string{"7", "07", "007"} {
		for range 20 {
			fmt.Fprintf(&b, "%s\n", k)
		}
	}
	y := "privacy: {epsilon: 1, delta: 1e-6}\ntables:\n" +
		"  - name: a\n    source: a.csv\n    columns:\n      k: {type: key}\n      x: {type: integer, min: 0, max: 1}\n" +
		"  - name: b\n    source: b.csv\n    columns:\n      k: {type: key}\n" +
		"join: [a.k = b.k]\nrelease:\n  columns: [x]\n"
	for name, body := range map[string]string{"a.csv": a.String(), "b.csv": b.String(), "synth.yaml": y} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := spec.Load(filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := engine.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	return e, s
}

// TestKeysCompareAsText: a join on keys counts the pairs whose stored keys
// have the same text, whatever the storage one tuple picks — "7" joins the
// twenty "7"s of b, not "07" or "007" — so one added tuple changes the
// count by at most the residual sensitivity the engine computes. (On the
// raw columns DuckDB cast b's text to BIGINT and joined all sixty: the
// change was 3× RS.) Ordered comparisons on keys are refused.
func TestKeysCompareAsText(t *testing.T) {
	ctx := context.Background()
	const join = "SELECT COUNT(*) FROM a, b WHERE a.k = b.k"
	for _, c := range []struct {
		name  string
		aKeys []string
		want  float64
	}{
		{"a.k stored as BIGINT", []string{"1", "7"}, 20},
		{"a.k stored as text", []string{"1", "7", "zz"}, 20},
		{"a.k = 07 as text", []string{"1", "07", "zz"}, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, s := loadKeyPair(t, c.aKeys)
			q, err := Parse(ctx, e, s, join)
			if err != nil {
				t.Fatal(err)
			}
			in, err := newInstance(ctx, e, s, q, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer in.close()
			got, err := in.answer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rs, _, err := in.rs(ctx, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("join count %v, want %v (keys compared as text)", got, c.want)
			}
			// Removing a's matching tuple drops the count to 0: the change
			// must be within RS (the engine's own sensitivity bound).
			if got > rs {
				t.Errorf("one tuple changes the count by %v > RS = %v", got, rs)
			}
		})
	}
	e, s := loadKeyPair(t, []string{"10", "11"})
	for _, text := range []string{"SELECT COUNT(*) FROM a WHERE k < '5'", "SELECT COUNT(*) FROM a WHERE k BETWEEN '1' AND '5'"} {
		if _, err := Parse(ctx, e, s, text); err == nil || !strings.Contains(err.Error(), "key column") {
			t.Errorf("%s: got %v, want a refusal naming the key column", text, err)
		}
	}
	q, err := Parse(ctx, e, s, "SELECT COUNT(*) FROM a WHERE k IN ('10', '010')")
	if err != nil {
		t.Fatal(err)
	}
	in, err := newInstance(ctx, e, s, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	if got, err := in.answer(ctx); err != nil || got != 1 {
		t.Errorf("k IN ('10', '010') on BIGINT keys: %v, %v; want 1 (text equality)", got, err)
	}
}

// keyPools are the key spellings a column draws from. "int" holds
// canonical integers only (the load stores the column as BIGINT: negative,
// zero and 18-digit keys among them), "intnull" the same and empty cells
// (NULL keys, still BIGINT); "big" adds 19-digit integers (beyond the
// canonical 18 digits, so the column is text); "mixed" adds leading zeros,
// −0, an integral decimal (7.0, stored as 7), a sign, an exponent and a
// letter (text).
var keyPools = map[string][]string{
	"int":     {"0", "7", "-3", "12", "999999999999999999", "-999999999999999999", "42"},
	"intnull": {"0", "7", "-3", "12", "", "", "999999999999999999"},
	"big":     {"7", "-3", "12", "1234567890123456789", "-1234567890123456789", "9223372036854775807"},
	"mixed":   {"7", "07", "007", "-3", "-03", "-0", "0", "7.0", "+7", "1e1", "C7", "", "12", "1234567890123456789"},
}

// randomKeyTriple writes a(ak, av), b(bk, bj), c(cj, cv) with keys drawn
// from the named pools (in the order ak, bk, bj, cj) into dir and returns
// the spec (joins b.bk = a.ak, c.cj = b.bj).
func randomKeyTriple(t *testing.T, rng *rand.Rand, dir string, pools [4]string) *spec.Spec {
	t.Helper()
	draw := func(p string) string { ps := keyPools[p]; return ps[rng.IntN(len(ps))] }
	var a, b, c strings.Builder
	a.WriteString("ak,av\n")
	for range 1 + rng.IntN(25) {
		fmt.Fprintf(&a, "%s,%d\n", draw(pools[0]), rng.IntN(10))
	}
	b.WriteString("bk,bj\n")
	for range 1 + rng.IntN(40) {
		fmt.Fprintf(&b, "%s,%s\n", draw(pools[1]), draw(pools[2]))
	}
	c.WriteString("cj,cv\n")
	for range 1 + rng.IntN(25) {
		fmt.Fprintf(&c, "%s,%d\n", draw(pools[3]), rng.IntN(10))
	}
	y := "privacy: {epsilon: 1, delta: 1e-6}\ntables:\n" +
		"  - name: a\n    source: a.csv\n    columns:\n      ak: {type: key}\n      av: {type: integer, min: 0, max: 9}\n" +
		"  - name: b\n    source: b.csv\n    columns:\n      bk: {type: key}\n      bj: {type: key}\n" +
		"  - name: c\n    source: c.csv\n    columns:\n      cj: {type: key}\n      cv: {type: integer, min: 0, max: 9}\n" +
		"join: [b.bk = a.ak, c.cj = b.bj]\nrelease:\n  columns: [av]\n"
	for name, body := range map[string]string{"a.csv": a.String(), "b.csv": b.String(), "c.csv": c.String(), "synth.yaml": y} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := spec.Load(filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// groupedByKeys runs the join of in grouped by the unit columns, each
// rendered by keys.Group, and returns the sum ψ per tuple of key texts as
// Go scans them (NULL spelled apart): what relational/multi reads.
func groupedByKeys(ctx context.Context, t *testing.T, in *instance, keys Keys, cols []spec.ColumnRef) map[string]float64 {
	t.Helper()
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = keys.Group(c, in.col(c))
	}
	saved := in.keys
	in.keys = keys
	defer func() { in.keys = saved }()
	q := "SELECT " + strings.Join(sel, ", ") + ", CAST(SUM(" + in.psi() + ") AS DOUBLE PRECISION)" + in.fromWhere() +
		" GROUP BY " + strings.Join(seq(len(cols)), ", ")
	out := map[string]float64{}
	vals := make([]sql.NullString, len(cols))
	var psi float64
	dest := []any{}
	for i := range vals {
		dest = append(dest, &vals[i])
	}
	dest = append(dest, &psi)
	err := in.db.Aggregate(ctx, q, nil, func(r *sql.Rows) error {
		if err := r.Scan(dest...); err != nil {
			return err
		}
		var k []string
		for _, v := range vals {
			if !v.Valid {
				k = append(k, "\x00null")
			} else {
				k = append(k, v.String)
			}
		}
		out[strings.Join(k, "|")] += psi
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// psiMultiset is the sorted ψ of contributions and the unit counts: what
// R2T's truncation reads (ids are dense, in the order rows come).
func psiMultiset(cs []Contribution, counts []int) string {
	ps := make([]float64, len(cs))
	for i, c := range cs {
		ps[i] = c.Psi
	}
	slices.Sort(ps)
	return fmt.Sprint(counts, ps)
}

// TestKeysNativeEqualsText: joining two key columns both stored as
// integers as stored, and grouping an integer unit column as stored
// ([Keys]), gives exactly the text form's join and groups — the oracle is
// the text form, every key compared through KeyText, which is the old
// code — on random three-table instances whose key columns mix canonical
// integers (negative, 18-digit), NULLs, 19-digit keys, leading zeros, −0,
// 7.0, +7, 1e1 and letters, so that every pair of storages (BIGINT =
// BIGINT, BIGINT = text, text = text) occurs. Compared: the answer (COUNT
// and SUM), R2T's contributions for units a.ak and b.bj (ψ multiset and
// unit counts), and the per-key sums with their key texts as Go reads them
// (relational/multi's contributions). The test also checks that the
// native form was used on the BIGINT = BIGINT instances, so that it is
// not vacuous.
func TestKeysNativeEqualsText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := 25
	if testing.Short() {
		n = 10
	}
	if os.Getenv("SYNTH_SLOW_AUDITS") == "1" {
		n = 200
	}
	rng := rand.New(rand.NewPCG(29, 1))
	names := []string{"int", "intnull", "big", "mixed"}
	e, err := engine.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	nativeSeen, textSeen := 0, 0
	for i := range n {
		var pools [4]string
		for k := range pools {
			pools[k] = names[rng.IntN(len(names))]
		}
		if i < 4 { // one all-integer, one all-text instance at least
			pools = [4]string{names[i%2], names[i%2], names[i%2], names[i%2]}
			if i >= 2 {
				pools = [4]string{"mixed", "int", "big", "intnull"}
			}
		}
		s := randomKeyTriple(t, rng, t.TempDir(), pools)
		if err := e.Load(ctx, s); err != nil {
			t.Fatalf("instance %d %v: load: %v", i, pools, err)
		}
		texts := []string{
			"SELECT COUNT(*) FROM a, b, c WHERE a.ak = b.bk AND b.bj = c.cj",
			"SELECT SUM(c.cv + a.av) FROM a, b, c WHERE a.ak = b.bk AND b.bj = c.cj",
			"SELECT SUM(c.cv) FROM a, b, c WHERE a.ak = b.bk AND b.bj = c.cj AND a.ak IN ('7', '07', '-0', '12')",
			"SELECT COUNT(*) FROM a, b WHERE a.ak = b.bk",
		}
		for _, text := range texts {
			q, err := Parse(ctx, e, s, text)
			if err != nil {
				t.Fatal(err)
			}
			in, err := newInstance(ctx, e, s, q, nil)
			if err != nil {
				t.Fatal(err)
			}
			native := in.keys
			if err := native.learn(ctx, s, []spec.ColumnRef{{Table: "a", Column: "ak"}, {Table: "b", Column: "bj"}}); err != nil {
				t.Fatal(err)
			}
			textForm := Keys{KeyTexter: e, integer: map[spec.ColumnRef]bool{}}
			for _, j := range q.Joins {
				if sqlText := JoinSQL(native, s, j, in.col); native.native(j.Left, j.Right) {
					nativeSeen++
					if strings.Contains(sqlText, "CAST") {
						t.Errorf("instance %d: %s stored as integers on both sides, rendered %s", i, j, sqlText)
					}
				} else {
					textSeen++
				}
			}
			run := func(keys Keys) (float64, string, map[string]float64) {
				in.keys = keys
				got, err := in.answer(ctx)
				if err != nil {
					t.Fatal(err)
				}
				units := []spec.ColumnRef{{Table: "a", Column: "ak"}}
				if len(q.Tables) == 3 {
					units = append(units, spec.ColumnRef{Table: "b", Column: "bj"})
				}
				cs, counts, err := in.contributions(ctx, units, 1)
				if err != nil {
					t.Fatal(err)
				}
				return got, psiMultiset(cs, counts), groupedByKeys(ctx, t, in, keys, units)
			}
			wantAns, wantPsi, wantGroups := run(textForm)
			gotAns, gotPsi, gotGroups := run(native)
			in.close()
			if gotAns != wantAns || gotPsi != wantPsi || !maps.Equal(gotGroups, wantGroups) {
				t.Errorf("instance %d, pools %v, %s:\nnative answer %v, ψ %s, groups %v\ntext   answer %v, ψ %s, groups %v",
					i, pools, text, gotAns, gotPsi, gotGroups, wantAns, wantPsi, wantGroups)
			}
		}
	}
	if nativeSeen == 0 || textSeen == 0 {
		t.Errorf("equalities compared as stored: %d, as text: %d; want both", nativeSeen, textSeen)
	}
	t.Logf("%d instances; equalities compared as stored %d, as text %d", n, nativeSeen, textSeen)
}
