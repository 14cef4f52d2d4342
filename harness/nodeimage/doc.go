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
package nodeimage
