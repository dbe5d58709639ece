// Command files writes the demo instance that `synth demo` releases, with
// its spec, into a folder, so that `synth evaluate --config DIR/synth.yaml`
// can compare the demo's release with its (private) data. `make demo` runs
// it to end with the utility report.
//
//	go run ./internal/demo/files -out DIR [-k 128] [-epsilon 1]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/synth-dp/synth/internal/demo"
)

func main() {
	out := flag.String("out", "", "folder to write the instance and synth.yaml into")
	k := flag.Int("k", 128, "size parameter k (the same as synth demo --k)")
	eps := flag.Float64("epsilon", 1, "privacy budget ε written in the spec")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 || *k < 2 || *k > 4096 {
		fmt.Fprintln(os.Stderr, "usage: files -out DIR [-k 2..4096] [-epsilon E]")
		os.Exit(2)
	}
	path, err := demo.WriteFiles(*out, *k, *eps, 1e-6)
	if err != nil {
		fmt.Fprintln(os.Stderr, "files:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
