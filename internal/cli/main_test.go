package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// result is what one run of the CLI produced.
type result struct {
	code           int
	stdout, stderr string
}

// run calls Main with args and fake IO streams.
func run(t *testing.T, args ...string) result {
	t.Helper()
	if args == nil {
		args = []string{}
	}
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), args, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// mustRun runs the CLI and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := run(t, args...)
	if r.code != ExitOK {
		t.Fatalf("synth %s: exit %d, want 0\nstderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// sharedRuns holds the runs of mustRunShared, by command line.
var sharedRuns struct {
	sync.Mutex
	m map[string]*sharedRun
}

// sharedRun is one command line's run, made once.
type sharedRun struct {
	once sync.Once
	r    result
}

// mustRunShared is mustRun for a read-only, deterministic command (inspect)
// on one of the checked-in examples, which several tests run with the same
// arguments: the first test to ask runs it, the others read the same
// result (stdout, stderr and exit code) instead of loading the TPC-H data
// again. A command line naming anything but the examples' specs is run
// every time, as mustRun does.
func mustRunShared(t *testing.T, args ...string) result {
	t.Helper()
	i := slices.Index(args, "--config")
	if i < 0 || i+1 >= len(args) || !slices.Contains([]string{tpchSpec, nationSpec, adultSpec}, args[i+1]) ||
		!slices.Contains(args, "inspect") {
		return mustRun(t, args...)
	}
	key := strings.Join(args, "\x00")
	sharedRuns.Lock()
	if sharedRuns.m == nil {
		sharedRuns.m = map[string]*sharedRun{}
	}
	sr := sharedRuns.m[key]
	if sr == nil {
		sr = &sharedRun{}
		sharedRuns.m[key] = sr
	}
	sharedRuns.Unlock()
	sr.once.Do(func() { sr.r = run(t, args...) })
	if sr.r.code != ExitOK {
		t.Fatalf("synth %s: exit %d, want 0\nstderr:\n%s", strings.Join(args, " "), sr.r.code, sr.r.stderr)
	}
	return sr.r
}

// Paths of the examples, relative to this package's folder.
const (
	tpchSpec  = "../../examples/tpch/synth.yaml"
	adultSpec = "../../examples/adult/synth.yaml"
)

// The tiny two-table instance: a ⋈ b on b.aid = a.id, one categorical
// column each. Its join has 5 rows.
const (
	tinyA        = "id,color\n1,red\n2,blue\n3,red\n"
	tinyB        = "aid,size\n1,S\n1,M\n2,L\n3,S\n3,S\n"
	tinyJoinRows = 5
)

// tinyOptions vary the tiny spec.
type tinyOptions struct {
	epsilon string // default "1"
	delta   string // default "1e-6"
	method  string // default "join-as-one"
	bSource string // default "b.csv"
	bData   string // written to bSource when not empty; default tinyB
	noB     bool   // do not write bSource (a missing data file)
}

// writeTiny writes the tiny spec and its CSVs into a new temporary folder
// and returns the spec's path and the folder.
func writeTiny(t *testing.T, o tinyOptions) (specPath, dir string) {
	t.Helper()
	if o.epsilon == "" {
		o.epsilon = "1"
	}
	if o.delta == "" {
		o.delta = "1e-6"
	}
	if o.method == "" {
		o.method = "join-as-one"
	}
	if o.bSource == "" {
		o.bSource = "b.csv"
	}
	if o.bData == "" {
		o.bData = tinyB
	}
	dir = t.TempDir()
	yaml := `privacy: {epsilon: ` + o.epsilon + `, delta: ` + o.delta + `}
tables:
  - name: a
    source: a.csv
    primary_key: id
    columns:
      id: {type: key}
      color: {type: categorical, values: [red, blue]}
  - name: b
    source: ` + o.bSource + `
    columns:
      aid: {type: key}
      size: {type: categorical, values: [S, M, L]}
join: ["b.aid = a.id"]
release:
  method: ` + o.method + `
  columns: [color, size]
`
	files := map[string]string{"synth.yaml": yaml, "a.csv": tinyA}
	if !o.noB {
		files[o.bSource] = o.bData
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "synth.yaml"), dir
}
