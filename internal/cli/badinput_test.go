package cli

import (
	"bytes"
	"compress/gzip"
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
		{"duplicated primary key of a non-unit table", replaceIn("orders.csv", "\n8,", "\n7,"), []string{"table orders", "o_orderkey", `"7"`, "2 rows"}},
		{"duplicated composite key", func(f map[string][]byte) {
			replaceIn("synth.yaml", "primary_key: o_orderkey", "primary_key: [o_orderkey, prio]")(f)
			replaceIn("orders.csv", "\n8,57,z", "\n7,57,y")(f)
		}, []string{"table orders", "(o_orderkey, prio)", `("7", "y")`}},
		{"primary key on a non-unique categorical column", replaceIn("synth.yaml", "primary_key: c_custkey", "primary_key: seg"), []string{"table customers", "seg", "100 rows"}},
		{"half the orders point at no customer", halfOrphans, []string{"orders.o_custkey → customers.c_custkey", "750 of 1500 rows", "join.orphans: drop"}},
		{"an empty foreign key", replaceIn("orders.csv", "\n8,57,", "\n8,,"), []string{"1 of 1500 rows", "1 with an empty key", "join.orphans: drop"}},
	}
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
