// Command synth releases differentially private synthetic data for
// multi-table relational databases. See `synth --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/synth-dp/synth/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal cancels the run, which stops at its next check;
	// a second one ends the process at once (the default action).
	context.AfterFunc(ctx, stop)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
