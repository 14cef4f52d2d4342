// Package jsonl writes and reads the JSON-lines files of a run directory
// (events.jsonl, app-metrics.jsonl, failures.jsonl).
//
// A Writer buffers lines, flushes them at least every FlushEvery and on
// Close, and keeps its first error: a recorder calls Write from its hot
// path and learns of a full disk once, at Close. Read delivers every whole
// record of a file; a last line cut off by a crash (no trailing newline, not
// valid JSON) is reported as a warning, not an error, so a run killed with
// SIGKILL can still be analysed up to its last whole record.
package jsonl
