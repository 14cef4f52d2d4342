// Package atomicfile writes files whole: into a temporary file in the same
// directory, synced, then renamed into place, so a reader (or a crash)
// never sees half a file. Every file droprun writes whole goes through it:
// summaries, run.json, reports, plots, markers, caches, image archives.
package atomicfile
