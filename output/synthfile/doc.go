// Package synthfile turns a release's DP cell counts into the synthetic
// Parquet file: the [Decoder] (cell → bins → representative values), the
// [Writer] (counts or shuffled rows → row groups, encoded in parallel, with
// the bins' dictionaries) and [Shuffle] (which rows, in which order, when
// the file holds a sample).
//
// # Cells, bins and values
//
// A release produces non-negative integer counts over a universe: the
// product of the released columns' binned domains ([spec.Column.Size]),
// indexed in mixed radix with the first column most significant,
//
//	cell = ((b0·n1 + b1)·n2 + b2)·…
//
// where b_j is the bin of column j and n_j its number of bins. A [Decoder]
// maps a cell back to its bins and every bin to one representative value
// (see [Decoder.Value] for the rule per type). A [Writer] takes the counts
// streamed in increasing cell order and writes each count as that many
// identical rows.
//
// # Privacy
//
// Nothing in this package touches private data. The counts are DP outputs
// and the representatives are fixed functions of the public domain, so the
// rows, the number of rows and the files written are post-processing of DP
// outputs and consume no budget. The file metadata holds whatever
// report the caller passes in; the caller is responsible for putting only
// public parameters and DP outputs in it (DESIGN.md §3, invariant 5).
//
// # Who may import it
//
// The orchestration (package release), the workload (package workload,
// which evaluates the workload's conditions on the same representative
// values the file holds), and tests. It imports spec, output/publish (the
// Writer's output is a [publish.File]) and output/layout, never package
// release. Its errors keep the "release:" prefix: they are the release
// command's.
//
// # Not implemented
//
// Output split into a folder of several Parquet files, null values (every
// column is required) and Parquet encryption.
package synthfile
