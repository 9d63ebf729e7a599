#!/usr/bin/env bash
# A Docker daemon for the container sandbox's Docker tests (test/e2e/sandbox-docker.test.ts: engine:
# docker): Debian's docker.io, started when none answers, as root, with no Docker networking
# (--iptables=false --bridge=none: the sandbox brings its own namespace, and the machine's packet filter
# stays as it is). Idempotent; where it cannot start one, the Docker tests are skipped.
set -euo pipefail
log() { echo "start-docker: $*" >&2; }
if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  log "no dockerd: the Docker sandbox tests are skipped"
  exit 0
fi
if docker info >/dev/null 2>&1; then
  log "ready"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  log "not root: start dockerd yourself (the Docker sandbox tests are skipped)"
  exit 0
fi
out="${TMPDIR:-/tmp}/harness-rl-dockerd.log"
nohup dockerd --iptables=false --ip6tables=false --bridge=none --exec-opt native.cgroupdriver=cgroupfs \
  </dev/null >"$out" 2>&1 &
for _ in $(seq 120); do
  if docker info >/dev/null 2>&1; then
    log "ready (dockerd pid $!, log $out)"
    exit 0
  fi
  sleep 0.5
done
log "dockerd did not answer within 60 s (see $out): the Docker sandbox tests are skipped"
exit 0
