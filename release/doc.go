// Package release orchestrates a release run and writes its output: the
// synthetic table as one Parquet file whose columns are the released columns
// with their declared types, the privacy report in the file's key-value
// metadata (key [MetadataKey]) and, beside it, the same report as a JSON
// sidecar.
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
// outputs and consume no budget. The metadata and sidecar hold whatever
// report the caller passes in; the caller is responsible for putting only
// public parameters and DP outputs in it (DESIGN.md §3, invariant 5).
//
// # Atomic output
//
// Files are written to a temporary file in the destination folder, synced
// and renamed onto the final name only when complete ([Writer.Close],
// [WriteFileAtomic], [Group]). A failed, cancelled or aborted write removes
// its temporary file and leaves any earlier file with the final name
// untouched. A rename is atomic on POSIX file systems; a group of several
// files is committed by several renames and is therefore not transactional
// as a whole (see [Group.Commit]).
//
// # Not implemented
//
// Output split into a folder of several Parquet files, null values (every
// column is required) and Parquet encryption.
package release
