// Package runfile is the run directory's contract: the names of its files
// (names.go) and the one way droprun opens a file it reads back from a
// run directory or a history: a regular file inside the directory, never a
// FIFO or a device (which would hang a reader or feed it without end), never
// through a link that leads out of the directory; and a file read whole is
// read only up to a size limit, whatever the file claims to be.
//
// A run directory is data anyone may hand droprun (a CI artifact, a copied
// history), so a planted summary.json linked to /dev/zero or a FIFO is an
// error that names the file, not an out-of-memory or a hang.
package runfile
