// An excerpt of k8s.io/kubernetes v1.37.2's go.mod, a test input.
module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	github.com/blang/semver/v4 v4.0.0
	k8s.io/api v0.0.0
	k8s.io/client-go v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	k8s.io/kubectl => ./staging/src/k8s.io/kubectl
)

replace github.com/example/pinned => github.com/example/pinned v1.2.3
