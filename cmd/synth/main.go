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
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
