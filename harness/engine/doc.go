// Package engine prepares and checks the container engine droprun's kind
// clusters run on.
//
// Setup turns a bare Debian machine into a working Docker host: it installs
// Debian's docker.io, configures dockerd ("userland-proxy": false, and,
// only where the host's capability bounding set lacks CAP_SYS_RESOURCE, a
// runc wrapper as the default runtime so privileged containers start),
// enables net.ipv4.conf.all.route_localnet, starts dockerd and checks it.
// Doctor reports what is missing on any machine, with a fix for each item.
package engine
