// Package report writes the utility report of `synth evaluate --report DIR`:
// how faithful a synthetic file is to the private data, at a glance.
//
// # What it writes
//
// DIR holds three things, written together and published at once:
//
//   - summary.json: the headline score of every workload kind (marginal
//     TVD, range error, sum error) beside the uniform distribution's score
//     (the floor a useless release would get), the numbers of every
//     workload family, and the release's privacy parameters read from its
//     privacy report ([ReadPrivacy]: the Parquet file's own metadata, else
//     privacy-report.json beside it);
//   - fig/*.png: one figure per 1-way marginal (true vs synthetic shares,
//     bars side by side), per 2-way marginal (heat map of the difference),
//     box plots of the absolute and relative errors per family, and the
//     numeric sums' error against their true value (log axes); marginals
//     over three or more columns and range families have numbers and box
//     plots but no figure of their own;
//   - index.html: one self-contained page (inline CSS, the same figures
//     embedded as PNG data URIs, no JavaScript, no network access) that
//     stands alone when mailed or archived.
//
// # Not for publication
//
// The report is computed from the private data and is not differentially
// private (DESIGN.md §3, invariant 5): it is for the data custodian. Every
// page and the summary say so ([workload.InternalLabel]); the folder and its
// files are created readable by their owner only.
//
// # Atomicity
//
// [Write] renders into a staging folder beside DIR and renames it into
// place: DIR holds the previous report or the new one, never a
// half-written one. It refuses to replace a folder that is not a report
// ([ErrNotReport]); an empty folder is taken.
package report
