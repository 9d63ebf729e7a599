#!/usr/bin/env bash
# The container sandbox's test image, built locally (no registry is reachable): a root holding
# busybox-static for /bin and /usr/lib symlinks like Debian's merged /usr, so a sandbox that mounts
# the host's /usr (node, npx, glibc) read-only runs the examples. `podman import`ed as
# localhost/harness-rl-sandbox:1; the tarball is kept under .cache. Skips when podman is missing or the
# image is there.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=localhost/harness-rl-sandbox:1
log() { echo "setup-sandbox-image: $*" >&2; }
if ! command -v podman >/dev/null 2>&1; then
  log "podman not installed: the container sandbox tests are skipped"
  exit 0
fi
# Docker (engine: docker) gets the same image when a Docker daemon answers (test/e2e/sandbox-docker.test.ts).
load_docker() {
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 &&
    ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
    podman save "$IMAGE" | docker load -q >&2 && log "loaded into Docker ($IMAGE)"
  fi
  return 0
}
if podman image exists "$IMAGE"; then
  load_docker
  log "ready ($IMAGE)"
  exit 0
fi
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] && file -L "$BUSYBOX" 2>/dev/null | grep -q dynamic && BUSYBOX=
[ -z "$BUSYBOX" ] && [ -x /bin/busybox ] && BUSYBOX=/bin/busybox
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,usr,etc,root,tmp,work,run}
cp "$BUSYBOX" "$root/bin/busybox"
for c in $("$root/bin/busybox" --list); do ln -sf busybox "$root/bin/$c"; done
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
mkdir -p .cache
tar -C "$root" -cf .cache/sandbox-image.tar .
podman import -q .cache/sandbox-image.tar "$IMAGE" >&2
load_docker
log "ready ($IMAGE)"
