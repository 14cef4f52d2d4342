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
// Where the source comes from: the bookshop source (go.mod, go.sum,
// apps/bookshop) is embedded in the droprun binary (package droprun at the
// module root), and Build extracts it into a temporary directory and
// compiles it there, so `go install`ed droprun builds its images from any
// directory. ModuleDir overrides it with a source tree, for edited
// bookshop source. Shipping droprun's own executable as the app instead
// was rejected: it would make every image ~70 MB instead of ~10 MB, and
// the app in a checkout and in an installed droprun would then be built in
// two different ways. bookshop's dependencies are droprun's own, so they
// are in the module cache of anyone who built droprun; building still
// needs the Go toolchain (`go` on PATH).
//
// Images are byte-reproducible: the same sources and Go toolchain give the
// same digests, from the embedded source and a checkout alike. Every tar header and the config's Created time use a fixed
// epoch (Unix 0, or SOURCE_DATE_EPOCH when set), entries are sorted and
// owned by root, and the binaries are built with -trimpath, -buildvcs=false
// and an empty build ID.
//
// Two flavours exist because the tool demonstrates a trap: FlavourStandard
// ships /bin/sleep so an exec preStop hook `sleep 5` works, while
// FlavourDistroless ships only the app, so the same hook fails and the
// rolling update drops requests.
//
// Assemble is the pure, lower-level step Build and BuildGo use; it needs no
// compiler and is what the unit tests exercise.
//
// BuildGo does the same for any Go service a custom-app scenario measures
// (`droprun image build-go PKG@VERSION`): `go install` from the module
// proxy, then one image per tag assembled like bookshop's, differing only
// in their version label, in one docker-save archive for
// app.custom.imageArchives.
//
// Inspect reads a user's image archive whole before any cluster work: a
// docker-save tar, an OCI image layout directory or a tar of one. It checks
// every blob against its digest and lists the images by their full names
// (FullName: "myapp:1.0" is docker.io/library/myapp:1.0, as containerd
// names it). Archive.DockerSave converts an OCI layout into the docker-save
// form kind's loader takes, keeping the names of its index.json annotations.
package image
