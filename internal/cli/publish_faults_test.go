package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/dp/lifetime"
	"github.com/synth-dp/synth/internal/failpoint"
	"github.com/synth-dp/synth/output/layout"
)

// buildSynth returns the synth binary to start: this package's test
// binary, which acts as synth when asSynthEnv is set (see TestMain; synthCmd
// sets it). cmd/synth's main is the same three lines as TestMain's, so the
// processes run the same code as the linked binary would.
func buildSynth(t *testing.T) string {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatalf("the test binary: %v", err)
	}
	return bin
}

// releaseState checks the output folder out: it must hold one complete
// release (both files, the Parquet's synth.privacy metadata equal to the
// sidecar report, nothing else) or, when allowMissing, not exist. It
// returns the release's ε ("" when missing).
func releaseState(t *testing.T, out string, allowMissing bool) (string, error) {
	t.Helper()
	entries, err := os.ReadDir(out)
	if os.IsNotExist(err) && allowMissing {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != layout.ReportName+","+layout.MarkdownName+","+layout.ParquetName {
		return "", fmt.Errorf("%s holds %q, want exactly the two reports and the Parquet file", out, names)
	}
	rep, err := os.ReadFile(filepath.Join(out, layout.ReportName))
	if err != nil {
		return "", err
	}
	// The markdown report must be the same run's: it renders the JSON's
	// DP outputs, n̂ among them.
	var parsed struct {
		Outputs []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(rep, &parsed); err != nil {
		return "", err
	}
	md, err := os.ReadFile(filepath.Join(out, layout.MarkdownName))
	if err != nil {
		return "", err
	}
	for _, o := range parsed.Outputs {
		if o.Name == "n_hat" && !strings.Contains(string(md), strconv.FormatFloat(o.Value, 'f', -1, 64)) {
			return "", fmt.Errorf("%s: the markdown report does not show the JSON's n_hat = %v (a mix of two runs)", out, o.Value)
		}
	}
	f, err := os.Open(filepath.Join(out, layout.ParquetName))
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return "", fmt.Errorf("%s: not a complete Parquet file: %v", out, err)
	}
	meta, ok := pf.Lookup(layout.MetadataKey)
	if !ok {
		return "", fmt.Errorf("%s: the Parquet file has no %s", out, layout.MetadataKey)
	}
	if strings.TrimSpace(string(rep)) != strings.TrimSpace(meta) {
		return "", fmt.Errorf("%s: MIX: the sidecar report is not the Parquet file's report", out)
	}
	var r struct {
		Epsilon float64 `json:"epsilon"`
	}
	if err := json.Unmarshal(rep, &r); err != nil {
		return "", err
	}
	return fmt.Sprint(r.Epsilon), nil
}

// onlyRelease checks that the parent of out holds nothing but out: no
// staging folder, no temporary.
func onlyRelease(t *testing.T, out string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(out) {
			t.Errorf("stray entry beside the release: %s", e.Name())
		}
	}
}

func synthCmd(bin, config, out string, eps string, env ...string) *exec.Cmd {
	cmd := exec.Command(bin, "-q", "release", "--config", config, "--out", out, "--overwrite", "--epsilon", eps)
	cmd.Env = append(append(os.Environ(), asSynthEnv+"=1"), env...)
	return cmd
}

// TestReleaseKillAtomic kills `synth release` with SIGKILL at each point
// of a run where a kill could leave something behind (see failpoint: just
// after the ledger charge; with every row given to the Parquet writer of
// the staging folder, the file unfinished; with the staging folder
// complete just before the publish rename; just after the rename or
// exchange, the previous release not yet removed), over a previous release
// and over none. A kill before the rename leaves the previous complete
// release (or no folder), a kill after it the new one, never a mix; the
// ledger keeps the charge of every killed run (each was charged before it
// read data); the next complete run leaves no staging folder behind. The
// points are reached, not timed: each run must die of the SIGKILL, and the
// staging folder it leaves must say where.
func TestReleaseKillAtomic(t *testing.T) {
	bin := buildSynth(t)
	config, _ := writeTiny(t, tinyOptions{})
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	charges := 0
	release := func(out, eps string, env ...string) ([]byte, error) {
		cmd := synthCmd(bin, config, out, eps, env...)
		cmd.Args = append(cmd.Args, "--ledger", ledger, "--create-ledger")
		b, err := cmd.CombinedOutput()
		charges++ // every run below charges, killed or not
		return b, err
	}
	checkLedger := func(where string) {
		t.Helper()
		h, err := lifetime.Read(ledger)
		if err != nil {
			t.Fatalf("%s: the ledger: %v", where, err)
		}
		if len(h.Entries) != charges {
			t.Fatalf("%s: the ledger holds %d charges, want %d: a charge was lost", where, len(h.Entries), charges)
		}
	}
	points := []struct {
		name      string
		published bool // the target holds the new release
	}{
		{failpoint.LedgerCharged, false},
		{failpoint.RowsWritten, false},
		{failpoint.BeforePublish, false},
		{failpoint.AfterPublish, true},
	}
	trial := 0
	for _, previous := range []bool{true, false} {
		for _, p := range points {
			trial++
			where := fmt.Sprintf("kill at %s, previous release %v", p.name, previous)
			out := filepath.Join(t.TempDir(), "rel")
			prev := ""
			if previous {
				if b, err := release(out, "1"); err != nil {
					t.Fatalf("%s: first release: %v\n%s", where, err, b)
				}
				prev = "1"
			}
			eps := fmt.Sprintf("%.4f", 1+float64(trial)/1000)
			b, err := release(out, eps, failpoint.KillEnv+"="+p.name)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !killed(ee) {
				t.Fatalf("%s: the run was not killed at its point: %v\n%s", where, err, b)
			}
			got, err := releaseState(t, out, !previous)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			want := prev
			if p.published {
				want = fmt.Sprint(mustFloat(t, eps))
			}
			if got != want {
				t.Fatalf("%s: the folder holds the release of ε = %q, want %q", where, got, want)
			}
			// Where the kill landed: a staging folder holding a complete
			// release is left just before the rename (the new files) and
			// just after an exchange (the previous release).
			wantStaged := p.name == failpoint.BeforePublish || p.name == failpoint.AfterPublish && previous
			if staged := stagedRelease(t, out); staged != wantStaged {
				t.Fatalf("%s: a complete staging folder left: %v, want %v", where, staged, wantStaged)
			}
			checkLedger(where)
			// The next complete run cleans what the killed run left.
			if b, err := release(out, "3"); err != nil {
				t.Fatalf("%s: next release: %v\n%s", where, err, b)
			}
			if got, err := releaseState(t, out, false); err != nil || got != "3" {
				t.Fatalf("%s: next release: ε %s, %v", where, got, err)
			}
			onlyRelease(t, out)
			checkLedger(where)
		}
	}
}

// killed reports whether the process of ee died of SIGKILL.
func killed(ee *exec.ExitError) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// stagedRelease reports whether a staging folder beside out holds both
// files of a release.
func stagedRelease(t *testing.T, out string) bool {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		_, errP := os.Stat(filepath.Join(m, layout.ParquetName))
		_, errR := os.Stat(filepath.Join(m, layout.ReportName))
		if errP == nil && errR == nil {
			return true
		}
	}
	return false
}

func mustFloat(t *testing.T, s string) float64 {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestReleaseConcurrentAtomic runs two releases into one folder at once
// (with --overwrite), over a previous release or none: one succeeds, the
// other succeeds too only if it ran after the first had finished, else it
// is refused as busy (the target's lock); the folder holds a complete
// release of a run that succeeded, never a mix, with no staging folder or
// lock file left.
func TestReleaseConcurrentAtomic(t *testing.T) {
	bin := buildSynth(t)
	config, _ := writeTiny(t, tinyOptions{})
	out := filepath.Join(t.TempDir(), "rel")
	// 12 races by default; SYNTH_SLOW_AUDITS (.ci/run) runs 40.
	trials := 12
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		trials = 40
	}
	if testing.Short() {
		trials = 3
	}
	for i := range trials {
		if i%2 == 1 {
			if err := os.RemoveAll(out); err != nil {
				t.Fatal(err)
			}
		}
		eps := []string{fmt.Sprintf("%.4f", 2+float64(i)/1000), fmt.Sprintf("%.4f", 3+float64(i)/1000)}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		outs := make([][]byte, 2)
		for k := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[k], errs[k] = synthCmd(bin, config, out, eps[k]).CombinedOutput()
			}()
		}
		wg.Wait()
		var succeeded []string
		for k := range 2 {
			switch {
			case errs[k] == nil:
				succeeded = append(succeeded, fmt.Sprint(mustFloat(t, eps[k])))
			case !strings.Contains(string(outs[k]), "being written by another run"):
				t.Fatalf("trial %d run %d: %v\n%s", i, k, errs[k], outs[k])
			}
		}
		got, err := releaseState(t, out, false)
		if err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
		if !slices.Contains(succeeded, got) {
			t.Fatalf("trial %d: the folder holds ε = %s, want one of the runs that succeeded: %q", i, got, succeeded)
		}
		onlyRelease(t, out)
	}
}

// TestReleaseConcurrentRefused: while one --overwrite release holds its
// output folder (here: paused just before its publish), a second
// --overwrite release into the same folder is refused at once, before it
// reads any data (its data file is missing: that error must not be the one
// reported), and the first completes; the folder holds the first's
// release and nothing is left beside it.
func TestReleaseConcurrentRefused(t *testing.T) {
	bin := buildSynth(t)
	config, dir := writeTiny(t, tinyOptions{})
	out := filepath.Join(t.TempDir(), "rel")
	if b, err := synthCmd(bin, config, out, "1").CombinedOutput(); err != nil {
		t.Fatalf("first release: %v\n%s", err, b)
	}
	pause := t.TempDir()
	first := synthCmd(bin, config, out, "2", failpoint.PauseEnv+"="+failpoint.BeforePublish+"="+pause)
	var stderr bytes.Buffer
	first.Stderr = &stderr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	// Wait until the first has staged its release and paused before its
	// publish: it waits there for the resume file, however long the
	// second run takes.
	for {
		if _, err := os.Stat(filepath.Join(pause, "paused")); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the first run ended before its publish: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !stagedRelease(t, out) {
		t.Fatal("the first run paused before its publish without a staged release")
	}
	// The second run's spec names data that is gone.
	second := filepath.Join(dir, "second.yaml")
	spec, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second, bytes.ReplaceAll(spec, []byte("a.csv"), []byte("gone.csv")), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := synthCmd(bin, second, out, "3").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "being written by another run") {
		t.Errorf("the second run while the first holds %s: %v\n%s; want a refusal naming the other run", out, err, b)
	}
	if err := os.WriteFile(filepath.Join(pause, "resume"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the first run: %v\n%s", err, stderr.String())
	}
	if got, err := releaseState(t, out, false); err != nil || got != "2" {
		t.Errorf("the folder holds ε = %s (%v), want the first run's 2", got, err)
	}
	onlyRelease(t, out)
}

// TestReleaseRefusesOverwrite: a second release into a folder holding one
// fails before reading any data, says that a rerun spends the budget again,
// and leaves the first release as it was.
func TestReleaseRefusesOverwrite(t *testing.T) {
	config, _ := writeTiny(t, tinyOptions{})
	out := filepath.Join(t.TempDir(), "rel")
	_, pq, rep := releaseOnce(t, config, out, "--seed", "1")
	r := run(t, "-q", "release", "--config", config, "--out", out, "--seed", "2")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--overwrite") || !strings.Contains(r.stderr, "privacy budget again") {
		t.Errorf("exit %d, stderr %q; want %d naming --overwrite and the budget", r.code, r.stderr, ExitUsage)
	}
	if b, _ := os.ReadFile(filepath.Join(out, layout.ParquetName)); !bytes.Equal(b, pq) {
		t.Error("the refused run changed the Parquet file")
	}
	if b, _ := os.ReadFile(filepath.Join(out, layout.ReportName)); !bytes.Equal(b, rep) {
		t.Error("the refused run changed the report")
	}
	onlyRelease(t, out)
	// With --overwrite it replaces the release.
	_, _, rep2 := releaseOnce(t, config, out, "--seed", "2", "--overwrite")
	if bytes.Equal(rep, rep2) {
		t.Error("--overwrite did not replace the report")
	}
	onlyRelease(t, out)
}

// TestReleaseOutputCheckedFirst: an output path that is a file is reported
// before any data is read (the data file is missing too: its error must not
// be the one reported).
func TestReleaseOutputCheckedFirst(t *testing.T) {
	config, dir := writeTiny(t, tinyOptions{noB: true})
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, filepath.Join(file, "sub")} {
		r := run(t, "-q", "release", "--config", config, "--out", out)
		if r.code == ExitOK || strings.Contains(r.stderr, "b.csv") || !strings.Contains(r.stderr, "a-file") {
			t.Errorf("--out %s: exit %d, stderr %q; want an output folder error before the missing b.csv is read", out, r.code, r.stderr)
		}
	}
}

// TestReleaseBudgetFlags: --epsilon and --delta replace the spec's budget
// (the report says so) and are validated like the spec.
func TestReleaseBudgetFlags(t *testing.T) {
	config, _ := writeTiny(t, tinyOptions{})
	_, _, rep := releaseOnce(t, config, filepath.Join(t.TempDir(), "o"), "--epsilon", "0.5", "--delta", "1e-7")
	var r struct {
		Epsilon, Delta float64
		Parameters     map[string]any
	}
	if err := json.Unmarshal(rep, &r); err != nil {
		t.Fatal(err)
	}
	if r.Epsilon != 0.5 || r.Delta != 1e-7 || r.Parameters["budget_source"] == nil {
		t.Errorf("report ε %v, δ %v, budget_source %v; want 0.5, 1e-7 and the flags named", r.Epsilon, r.Delta, r.Parameters["budget_source"])
	}
	for _, bad := range [][]string{{"--epsilon", "0"}, {"--epsilon", "-1"}, {"--epsilon", "+Inf"}, {"--epsilon", "NaN"}, {"--delta", "1"}, {"--delta", "-0.1"}, {"--delta", "NaN"}} {
		res := run(t, append([]string{"-q", "release", "--config", config, "--out", filepath.Join(t.TempDir(), "o")}, bad...)...)
		if res.code != ExitUsage || !strings.Contains(res.stderr, bad[0]) {
			t.Errorf("%q: exit %d, stderr %q; want %d naming the flag", bad, res.code, res.stderr, ExitUsage)
		}
	}
}

// TestReleaseRowsFlag: --rows N writes exactly N rows, in both directions
// of the DP row count.
func TestReleaseRowsFlag(t *testing.T) {
	config, _ := writeTiny(t, tinyOptions{})
	for _, n := range []int64{7, 50_000} {
		rows, _, rep := releaseOnce(t, config, filepath.Join(t.TempDir(), "o"), "--seed", "1", "--rows", fmt.Sprint(n))
		if rows != n {
			t.Errorf("--rows %d wrote %d rows", n, rows)
		}
		if !bytes.Contains(rep, []byte(fmt.Sprintf(`"rows_written": %d`, n))) {
			t.Errorf("--rows %d: the report does not say rows_written %d", n, n)
		}
	}
	if r := run(t, "-q", "release", "--config", config, "--out", t.TempDir(), "--rows", "-1"); r.code != ExitUsage {
		t.Errorf("--rows -1: exit %d, want %d", r.code, ExitUsage)
	}
}

// TestReleaseSIGTERM sends SIGTERM to `synth release` while it is paused at
// a point of its run (see failpoint: before it reads data, and with its
// rows written but not yet finished), then lets it go on: the run stops
// at its next check of its context, exits 1 saying it was interrupted and
// that no output was written, and leaves the previous release as it was
// with nothing beside it. The signal lands where the run is, not after a
// guessed delay.
func TestReleaseSIGTERM(t *testing.T) {
	bin := buildSynth(t)
	config, _ := writeTiny(t, tinyOptions{})
	for _, point := range []string{failpoint.LedgerCharged, failpoint.RowsWritten} {
		out := filepath.Join(t.TempDir(), "rel")
		if b, err := synthCmd(bin, config, out, "1").CombinedOutput(); err != nil {
			t.Fatalf("first release: %v\n%s", err, b)
		}
		pause := t.TempDir()
		cmd := synthCmd(bin, config, out, "2", failpoint.PauseEnv+"="+point+"="+pause)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		for {
			if _, err := os.Stat(filepath.Join(pause, "paused")); err == nil {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("%s: the run ended before it paused: %v\n%s", point, err, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// The signal is handled on another goroutine: resume once the
		// paused run has seen its context cancelled (it says so), not
		// after a guessed delay.
		for {
			if _, err := os.Stat(filepath.Join(pause, "cancelled")); err == nil {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("%s: the paused run ended: %v\n%s", point, err, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		if err := os.WriteFile(filepath.Join(pause, "resume"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		err := <-done
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitRuntime || !strings.Contains(stderr.String(), "interrupted; no output was written") {
			t.Fatalf("%s: exit %v, want %d saying it was interrupted\n%s", point, err, ExitRuntime, stderr.String())
		}
		if got, err := releaseState(t, out, false); err != nil || got != "1" {
			t.Errorf("%s: the folder holds ε = %s (%v), want the previous release's 1", point, got, err)
		}
		onlyRelease(t, out)
	}
}
