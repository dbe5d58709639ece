// Package publish writes a release's output so that a reader never sees
// it half-written: single files committed by one rename ([File],
// [WriteFileAtomic], [Group]), and whole release folders staged beside
// their target and published by one rename or exchange ([Stage],
// [NewStage], [Stage.Publish]). It also cleans what killed runs leave
// behind ([CleanStale]).
//
// # Atomic files
//
// Files are written to a temporary file in the destination folder, synced
// and renamed onto the final name only when complete ([File.Commit],
// [WriteFileAtomic], [Group.Commit]). A failed, cancelled or aborted write
// removes its temporary file and leaves any earlier file with the final
// name untouched. A rename is atomic on POSIX file systems; a group of
// several files is committed by several renames and is therefore not
// transactional as a whole (see [Group]).
//
// # Release folders
//
// A release is published as one folder, by one rename:
//
//  1. [NewStage], before any data is read, checks the target folder (a
//     file there, a folder holding anything but a release, a previous
//     release without overwrite) and creates a fresh staging folder beside
//     it, in the same parent (so on the same file system): the target's
//     base name as a temporary name, "." + base + "." + digits + ".tmp",
//     exactly as [CreateFile] names temporary files. It takes an exclusive
//     flock(2) on the staging folder, held until the process ends, and
//     writes, syncs and removes a probe file there: an unwritable parent, a
//     file in the way or a full disk is found before the data is loaded.
//  2. The run writes every file of the release into the staging folder and
//     syncs it.
//  3. [Stage.Publish] renames the staging folder onto the target with
//     rename(2), which is atomic and succeeds only when the target does not
//     exist or is an empty folder. When the target holds a previous release
//     (and overwrite was asked for), it swaps the two folders with
//     renameat2(RENAME_EXCHANGE), which is atomic too: the target names the
//     old complete folder until the instant it names the new complete one.
//     The old release, now under the staging name, is then removed.
//
// So a reader of the target sees the previous release or the new one,
// whole, never a mix, whatever kills the process and whenever. What a
// killed run can leave is a staging folder (its own, or the old release it
// swapped out), under the temporary name and no longer locked:
// [CleanStale] removes it on the next run. A live run's staging folder is
// locked, so a cleaner never takes it.
//
// One run at a time: [NewStage] also takes an exclusive flock(2) on a
// lock file beside the target ("." + base + ".lock"), held until
// [Stage.Publish] has removed the previous release or [Stage.Abort]; a
// second run into the same folder meanwhile is refused with [ErrBusy]
// before it reads any data, so two runs never both spend the budget on
// one folder. The kernel drops a flock when its process dies (kill -9
// included): a lock file a killed run leaves is free, and the next run
// takes it over (see lockTarget). Where flock is not available, runs are
// not excluded and the last swap wins.
//
// Replacing a release needs a target whose entries can be removed (the
// old release is removed after the swap): [NewStage] asks access(2) and
// refuses a read-only folder up front with [ErrNotWritable] (Linux),
// leaving the old release in place, rather than swap it out into a
// sibling nobody can delete.
//
// Where renameat2(RENAME_EXCHANGE) is not available (not Linux, or a file
// system without it, such as NFS), Publish falls back to moving the old
// release aside and renaming the new one into place: never a mix either,
// but a reader may find the target missing for a moment, and a crash in
// between leaves only the moved-aside old release.
//
// # Privacy
//
// Nothing here reads private data or decides anything from it: the package
// moves bytes its caller has already made public.
//
// # Who may import it
//
// The orchestration (package release), the Parquet writer
// (output/synthfile, which writes through a [File]) and tests. It imports only
// output/layout (the names of the files a release folder holds) and the
// standard library; it must never import package release or anything that
// runs a mechanism. Its errors keep the "release:" prefix: they are the
// release command's, and users read them as such.
package publish
