package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/synth-dp/synth/engine"
)

// asSynthEnv, when set to 1 in a child process's environment, makes this
// package's test binary act as the synth binary: TestMain runs Main on the
// command line exactly as cmd/synth's main does, and never runs the tests.
// The fault tests (publish_faults_test.go) start the test binary itself
// this way instead of linking cmd/synth with `go build` (about 20 s a link
// on a loaded machine, once per test).
const asSynthEnv = "SYNTH_TEST_AS_SYNTH"

func TestMain(m *testing.M) {
	if os.Getenv(asSynthEnv) == "1" {
		// The same as cmd/synth's main.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		// The first signal cancels the run, which stops at its next check;
		// a second one ends the process at once (the default action).
		context.AfterFunc(ctx, stop)
		code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	// The tests run the CLI on the tiny specs and TPC-H SF 0.01, hundreds
	// of times: DuckDB on one thread gives the same outputs for about a
	// quarter less CPU (no idle worker woken for every query). The
	// processes the fault tests start inherit it. An explicit setting is
	// kept.
	if os.Getenv(engine.ThreadsEnv) == "" {
		os.Setenv(engine.ThreadsEnv, "1")
	}
	dir, err := os.MkdirTemp("", "synth-cli-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	sharedDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sharedDir is a temporary folder that lives as long as the test binary,
// for what several tests share (see releaseParams); TestMain removes it.
var sharedDir string
