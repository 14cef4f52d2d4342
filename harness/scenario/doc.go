// Package scenario reads, defaults and validates scenario files
// (apiVersion droprun/v1alpha1, kind Scenario) and renders each variant's
// Kubernetes objects.
//
// Reading is bounded and strict, for every file a user names: a scenario,
// a custom app's Deployment manifest, a kubeconfig (runfile.ReadUser, at most
// runfile.MaxUserFile bytes). Keys match case-sensitively, a key given twice or
// unknown is an error, and every problem in a file (decoding and validation
// alike) is reported at once as a FieldError with the field path and the
// fix. Paths in a scenario are relative to its folder (output excepted:
// it is relative to the working directory); a leading ~ is the user's home
// directory. LoadFS reads a scenario from an fs.FS, such as the shipped
// scenarios embedded in droprun, and reads its manifests from there too;
// its image archives and kubeconfig, which are opened on disk, are
// relative to the working directory.
//
// A variant entry with a sweep (SweepSpec) is expanded when the file is
// read, after defaults and before validation, into one variant per value
// named NAME@FIELD=VALUE; problems still name the entry's place in the file
// (variants[N], variants[N].sweep.values[K]).
package scenario
