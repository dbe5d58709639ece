package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeKeyed writes a customers ⋈ orders spec (orders.o_custkey →
// customers.c_custkey, both tables with a primary key) and its CSVs into a
// new folder; edit changes the files (by name) before they are written.
// It returns the spec's path.
func writeKeyed(t *testing.T, edit func(files map[string][]byte)) string {
	t.Helper()
	var cust, orders strings.Builder
	cust.WriteString("c_custkey,seg\n")
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&cust, "%d,%s\n", i, []string{"A", "B", "C"}[i%3])
	}
	orders.WriteString("o_orderkey,o_custkey,prio\n")
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&orders, "%d,%d,%s\n", i, 1+(i*7)%300, []string{"x", "y", "z"}[i%3])
	}
	files := map[string][]byte{
		"customers.csv": []byte(cust.String()),
		"orders.csv":    []byte(orders.String()),
		"synth.yaml": []byte(`privacy: {epsilon: 1, delta: 1e-6}
tables:
  - name: customers
    source: customers.csv
    primary_key: c_custkey
    columns:
      c_custkey: {type: key}
      seg: {type: categorical, values: [A, B, C]}
  - name: orders
    source: orders.csv
    primary_key: o_orderkey
    columns:
      o_orderkey: {type: key}
      o_custkey: {type: key}
      prio: {type: categorical, values: [x, y, z]}
join: ["orders.o_custkey = customers.c_custkey"]
release:
  method: join-as-one
  columns: [seg, prio]
`)}
	if edit != nil {
		edit(files)
	}
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "synth.yaml")
}

// replaceIn edits one file of writeKeyed's set.
func replaceIn(name, old, new string) func(map[string][]byte) {
	return func(f map[string][]byte) {
		if !bytes.Contains(f[name], []byte(old)) {
			panic(name + " lacks " + old)
		}
		f[name] = bytes.Replace(f[name], []byte(old), []byte(new), 1)
	}
}

// gzipCustomers replaces customers.csv by customers.csv.gz, cut by cut
// (when > 0) or with its CRC flipped.
func gzipCustomers(cut int, badCRC bool) func(map[string][]byte) {
	return func(f map[string][]byte) {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		z.Write(f["customers.csv"])
		z.Close()
		data := b.Bytes()
		if cut > 0 {
			data = data[:len(data)-cut]
		}
		if badCRC {
			data[len(data)-6] ^= 0xff
		}
		delete(f, "customers.csv")
		f["customers.csv.gz"] = data
		f["synth.yaml"] = bytes.Replace(f["synth.yaml"], []byte("source: customers.csv"), []byte("source: customers.csv.gz"), 1)
	}
}

// TestReleaseRefusesBadKeysAndFiles: each bad input of issue 36 item 2,
// which released without a word (exit 0, a plausible release) before, now
// fails with exit 1 (bad data), names the problem, and writes nothing.
func TestReleaseRefusesBadKeysAndFiles(t *testing.T) {
	// Half the orders point at no customer: keys 1001… for even orders.
	halfOrphans := func(f map[string][]byte) {
		lines := strings.Split(string(f["orders.csv"]), "\n")
		for i := 1; i < len(lines)-1; i += 2 {
			parts := strings.SplitN(lines[i], ",", 3)
			parts[1] = "1" + parts[1] + "000"
			lines[i] = strings.Join(parts, ",")
		}
		f["orders.csv"] = []byte(strings.Join(lines, "\n"))
	}
	tests := []struct {
		name string
		edit func(map[string][]byte)
		want []string
	}{
		{"truncated csv.gz", gzipCustomers(len("c_custkey")*30, false), []string{"customers.csv.gz", "truncated"}},
		{"gzip with a bad CRC", gzipCustomers(0, true), []string{"customers.csv.gz", "damaged"}},
		{"duplicated primary key of a non-unit table", replaceIn("orders.csv", "\n8,", "\n7,"), []string{"table orders", "o_orderkey", "not unique", "synth inspect"}},
		{"duplicated composite key", func(f map[string][]byte) {
			replaceIn("synth.yaml", "primary_key: o_orderkey", "primary_key: [o_orderkey, prio]")(f)
			replaceIn("orders.csv", "\n8,57,z", "\n7,57,y")(f)
		}, []string{"table orders", "(o_orderkey, prio)", "not unique"}},
		{"primary key on a non-unique categorical column", replaceIn("synth.yaml", "primary_key: c_custkey", "primary_key: seg"), []string{"table customers", "seg", "not unique"}},
		{"half the orders point at no customer", halfOrphans, []string{"orders.o_custkey → customers.c_custkey (keys customers lacks)", "join.orphans: drop", "synth inspect"}},
		{"an empty foreign key", replaceIn("orders.csv", "\n8,57,", "\n8,,"), []string{"orders.o_custkey → customers.c_custkey (empty keys)", "join.orphans: drop"}},
	}
	// Key errors name the table and the column(s), not the private value
	// or its count (inspect prints them: TestInspectDeclaredKeys).
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specPath := writeKeyed(t, tt.edit)
			out := filepath.Join(filepath.Dir(specPath), "out")
			r := run(t, "release", "--config", specPath, "--out", out, "--seed", "1")
			if r.code != ExitRuntime {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, ExitRuntime, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused release left %s (%v)", out, err)
			}
		})
	}
}

// TestOrphansInspectAndDrop: inspect states the exact orphan count, and a
// spec that declares join.orphans: drop releases the join without them.
func TestOrphansInspectAndDrop(t *testing.T) {
	specPath := writeKeyed(t, func(f map[string][]byte) {
		replaceIn("orders.csv", "\n8,57,", "\n8,,")(f)
		replaceIn("orders.csv", "\n9,64,", "\n9,4242,")(f)
	})
	r := mustRun(t, "inspect", "--config", specPath)
	for _, w := range []string{"NON-PRIVATE join size:        1498",
		"NON-PRIVATE orphans:          orders.o_custkey → customers.c_custkey: 2 of 1500 rows reference no row (1 with an empty key, 1 with a key customers lacks)",
		"synth release refuses this data unless the spec declares join.orphans: drop"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("inspect lacks %q:\n%s", w, r.stdout)
		}
	}
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`join: ["orders.o_custkey = customers.c_custkey"]`),
		[]byte("join:\n  on: [\"orders.o_custkey = customers.c_custkey\"]\n  orphans: drop"), 1)
	if err := os.WriteFile(specPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "inspect", "--config", specPath)
	if !strings.Contains(r.stdout, "join.orphans: drop: the release leaves them out of the join") {
		t.Errorf("inspect with drop:\n%s", r.stdout)
	}
	mustRun(t, "release", "--config", specPath, "--out", filepath.Join(filepath.Dir(specPath), "out"), "--seed", "1")
	// A clean instance states none.
	r = mustRun(t, "inspect", "--config", writeKeyed(t, nil))
	if !strings.Contains(r.stdout, "orders.o_custkey → customers.c_custkey: none (every one of the 1500 rows references a row)") {
		t.Errorf("clean inspect:\n%s", r.stdout)
	}
}

// TestInspectUnicodeKeys: keys written in NFC in one file and NFD in the
// other do not join; inspect says why (it said nothing before).
func TestInspectUnicodeKeys(t *testing.T) {
	specPath := writeKeyed(t, func(f map[string][]byte) {
		replaceIn("customers.csv", "\n7,", "\nJos\u00e9,")(f)   // é, one code point (NFC)
		replaceIn("orders.csv", "\n1,8,", "\n1,Jose\u0301,")(f) // e + combining acute (NFD)
	})
	r := mustRun(t, "inspect", "--config", specPath)
	for _, w := range []string{"different Unicode normalization forms", "customers.c_custkey and orders.o_custkey write 1 key value(s) differently", "normalize both sources to NFC"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("inspect lacks %q:\n%s", w, r.stdout)
		}
	}
	if r := mustRun(t, "inspect", "--config", writeKeyed(t, nil)); strings.Contains(r.stdout, "normalization forms") {
		t.Errorf("a clean instance gets a Unicode hint:\n%s", r.stdout)
	}
}

// TestExitCodeContract: the README's exit-code table, one command per
// row's examples (TestExitCodes has many more of each).
func TestExitCodeContract(t *testing.T) {
	clean := writeKeyed(t, nil)
	cleanDir := filepath.Dir(clean)
	released := filepath.Join(cleanDir, "released")
	mustRun(t, "release", "--config", clean, "--out", released, "--seed", "1")
	ownership := writeKeyed(t, func(f map[string][]byte) {
		replaceIn("synth.yaml", "delta: 1e-6}", "delta: 1e-6, unit: orders}")(f)
		replaceIn("synth.yaml", "method: join-as-one", "method: privacy-unit")(f)
	})
	tinyEps := writeKeyed(t, replaceIn("synth.yaml", "epsilon: 1,", "epsilon: 5e-324,"))
	dupKey := writeKeyed(t, replaceIn("orders.csv", "\n8,", "\n7,"))
	orphans := writeKeyed(t, replaceIn("orders.csv", "\n8,57,", "\n8,4242,"))
	missing := writeKeyed(t, replaceIn("synth.yaml", "source: orders.csv", "source: nowhere.csv"))
	q := "SELECT COUNT(*) FROM orders JOIN customers ON orders.o_custkey = customers.c_custkey"
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"success: release", []string{"release", "--config", clean, "--out", filepath.Join(cleanDir, "o2"), "--seed", "1"}, ExitOK},
		{"success: inspect", []string{"inspect", "--config", clean}, ExitOK},
		{"data: duplicated primary key", []string{"release", "--config", dupKey, "--out", filepath.Join(cleanDir, "o3")}, ExitRuntime},
		{"data: orphans", []string{"release", "--config", orphans, "--out", filepath.Join(cleanDir, "o4")}, ExitRuntime},
		{"data: missing data file", []string{"inspect", "--config", missing}, ExitRuntime},
		{"runtime: query time limit", []string{"query", released, "SELECT count(*) FROM synthetic a, synthetic b, synthetic c, synthetic d, synthetic e, synthetic f", "--timeout", "1s"}, ExitRuntime},
		{"usage: unknown flag", []string{"release", "--frobnicate"}, ExitUsage},
		{"usage: rounds above the limit", []string{"release", "--config", clean, "--out", filepath.Join(cleanDir, "o5"), "--rounds", "1000000000"}, ExitUsage},
		{"usage: memory cap below the limit", []string{"release", "--config", clean, "--out", filepath.Join(cleanDir, "o5"), "--memory-cap", "1"}, ExitUsage},
		{"usage: ε = 5e-324", []string{"release", "--config", tinyEps, "--out", filepath.Join(cleanDir, "o5")}, ExitUsage},
		{"usage: ownership", []string{"release", "--config", ownership, "--out", filepath.Join(cleanDir, "o5")}, ExitUsage},
		{"usage: answer with δ = 0 and no unit", []string{"answer", "--config", clean, "--query", q, "--delta", "0"}, ExitUsage},
		{"usage: a folder holding a release", []string{"release", "--config", clean, "--out", released}, ExitUsage},
		{"usage: SQL that does not parse", []string{"query", released, "SELEKT 1"}, ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.args...)
			if r.code != tc.want {
				t.Errorf("synth %s: exit %d, want %d\n%s", strings.Join(tc.args, " "), r.code, tc.want, r.stderr)
			}
			if tc.want != ExitOK && !strings.Contains(r.stderr, "synth: ") {
				t.Errorf("no message on stderr:\n%s", r.stderr)
			}
		})
	}
	// An interrupted run: nothing written, exit 1.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	out := filepath.Join(cleanDir, "interrupted")
	if code := Main(ctx, []string{"release", "--config", clean, "--out", out}, &stdout, &stderr); code != ExitRuntime {
		t.Errorf("interrupted release: exit %d, want 1\n%s", code, stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an interrupted release left %s", out)
	}
}

// TestInspectDeclaredKeys: inspect reports every declared primary key in
// its NON-PRIVATE section, the duplicated value and its rows included,
// instead of failing as the release does.
func TestInspectDeclaredKeys(t *testing.T) {
	r := mustRun(t, "inspect", "--config", writeKeyed(t, replaceIn("orders.csv", "\n8,", "\n7,")))
	for _, w := range []string{`NON-PRIVATE primary key:      orders (o_orderkey): NOT unique: value "7" in 2 rows`,
		"NON-PRIVATE primary key:      customers (c_custkey): unique, no NULL",
		"table orders's primary key (o_orderkey) is not unique and non-NULL"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("inspect lacks %q:\n%s", w, r.stdout)
		}
	}
}
