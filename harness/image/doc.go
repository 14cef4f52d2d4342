// Package image builds the bookshop demo images offline, the way ko does:
// it cross-compiles static Go binaries with the local toolchain and wraps
// each in a single-layer image assembled in memory with go-containerregistry.
// No container registry and no Docker daemon are involved.
//
// Build compiles every requested version of the app (stamped with
// -X main.version=<v>) plus the tiny sleep program, assembles one image per
// version and Flavour, and writes all of them to one docker-save tarball that
// `kind load image-archive` (containerd's `ctr images import`) accepts.
//
// Images are byte-reproducible: the same sources and Go toolchain give the
// same digests. Every tar header and the config's Created time use a fixed
// epoch (Unix 0, or SOURCE_DATE_EPOCH when set), entries are sorted and
// owned by root, and the binaries are built with -trimpath, -buildvcs=false
// and an empty build ID.
//
// Two flavours exist because the tool demonstrates a trap: FlavourStandard
// ships /bin/sleep so an exec preStop hook `sleep 5` works, while
// FlavourDistroless ships only the app, so the same hook fails and the
// rolling update drops requests.
//
// Assemble is the pure, lower-level step Build uses; it needs no compiler
// and is what the unit tests exercise.
package image
