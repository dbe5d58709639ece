// Command tpchgen writes TPC-H-shaped CSV or Parquet tables (region, nation, customer,
// orders, lineitem) at any scale factor, deterministic by seed. See package
// internal/tpchgen for the shape of the data.
//
//	tpchgen -sf 1 -seed 1 -out data/sf1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/synth-dp/synth/internal/tpchgen"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("tpchgen", flag.ContinueOnError)
	sf := fs.Float64("sf", 0.01, "TPC-H scale factor (customer has 150,000·SF rows, lineitem about 6,000,000·SF)")
	seed := fs.Uint64("seed", 1, "random seed: the same flags write the same bytes")
	out := fs.String("out", "", "output folder (required; created when missing)")
	format := fs.String("format", tpchgen.FormatCSV, "file format: csv or parquet (converted by embedded DuckDB)")
	skew := fs.Float64("skew", 0, "Zipf exponent > 1 for orders per customer (0: TPC-H's uniform draw)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "tpchgen: unexpected arguments %q\n", fs.Args())
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	start := time.Now()
	res, err := tpchgen.Generate(ctx, tpchgen.Config{ScaleFactor: *sf, Seed: *seed, Dir: *out, Skew: *skew, Format: *format})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, tpchgen.ErrConfig) {
			return 2
		}
		return 1
	}
	for _, t := range tpchgen.Tables {
		log.Info("wrote", "table", t, "rows", res.Rows[t], "file", res.Files[t])
	}
	log.Info("done", "sf", *sf, "elapsed", time.Since(start).Round(time.Millisecond))
	return 0
}
