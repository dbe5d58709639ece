package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
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
		code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
