#!/bin/sh
# Builds the two versions of "my-service" this history measured, from
# droprun's own bookshop images, into my-service-1.0.tar and my-service-1.1.tar
# (not committed: 25 MiB each; this script rebuilds them, docker needed):
#   1.0  exits at SIGTERM (bookshop's default shutdown, none): the bug
#   1.1  drains: at SIGTERM it fails readiness and keeps serving 5 s, then
#        shuts down (BOOKSHOP_SHUTDOWN=drain): the fix
# Each version is two images (a, b) the rollouts alternate between.
set -eu
cd "$(dirname "$0")"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
droprun image build --out "$out"
docker load -i "$out/bookshop-linux-amd64.tar"
for v in 1 2; do
	tag=$(printf 'a b' | cut -d' ' -f"$v")
	docker tag "bookshop:v$v" "my-service:1.0-$tag"
	printf 'FROM bookshop:v%s\nENV BOOKSHOP_SHUTDOWN=drain BOOKSHOP_DRAIN_DELAY=5s\n' "$v" |
		DOCKER_BUILDKIT=0 docker build -q -t "my-service:1.1-$tag" -
done
for v in 1.0 1.1; do
	docker save -o "my-service-$v.tar" "my-service:$v-a" "my-service:$v-b"
done
