// Package nodeimage builds a kind node image offline, from nothing but the Go
// module proxy and Debian's package mirror.
//
// The recipe follows kind's own base image (images/base in the kind module)
// and the notes in the project's ENVIRONMENT.md: Kubernetes, containerd, runc,
// crictl, the CNI plugins, etcd, CoreDNS and local-path-provisioner are built
// with the local Go toolchain from their modules; a Debian root filesystem
// comes from debootstrap; the control-plane images kubeadm asks for are
// assembled FROM scratch and imported into the node's containerd, so a
// cluster made from the image never pulls anything. Pod networking across
// nodes uses droprun's own small CNI daemon (apps/cni) instead of kindnetd,
// which the module proxy does not serve.
//
// Every artifact is cached under the user's cache directory, keyed by
// component and version and written atomically, so an interrupted build
// resumes where it stopped and a second Build is a no-op.
//
// Selector chooses the image a cluster is created from. With Auto (the
// scenario default) that is droprun's image when the local engine has it
// with the current inputs; else kind's published image (PublishedImage,
// the digest kind v0.33.0 pins) when it is present or a registry serves it
// (a manifest HEAD with a short timeout, so it fails fast offline; the pull
// goes through docker), and then kind's own CNI, kindnetd, is used; else
// the offline Build, announced with its expected time. An explicit image
// is used as given, pulled when missing. Whether an image is droprun's is
// read from its LabelInputs label, never from its name: droprun's image
// pushed to a registry under another name is still recognised.
package nodeimage
