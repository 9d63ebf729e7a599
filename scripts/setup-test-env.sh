#!/usr/bin/env bash
# Everything `npm test` needs beyond Node 20, set up on a fresh Debian machine and idempotent (a
# second run only checks): the Debian packages (installed as root or through sudo when missing),
# the npm dependencies, PostgreSQL (scripts/start-postgres.sh), code-server for the VS Code tests
# (scripts/setup-code-server.sh) and the Python trainer's virtual environment.
#
# Progress goes to stderr; stdout is only `export …` lines, so
#   env=$(scripts/setup-test-env.sh) && eval "$env"
# sets HARNESS_RL_TEST_PG (and HARNESS_RL_PG) for the tests; `npm test` does exactly that first.
# A HARNESS_RL_TEST_PG already set is kept (and the local PostgreSQL is not started).
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "setup-test-env: $*" >&2; }

# --- Debian packages --------------------------------------------------------------------------
# postgresql: the shared store's tests; chromium: webview and VS Code (code-server) tests;
# the -dev libraries and ripgrep: code-server's native modules; python3-venv: the trainer's venv;
# openssl: the self-signed certificate of the wss:// node test; podman, runc, socat, busybox-static:
# the container sandbox (runc: crun refuses hybrid cgroups) and its test image; docker.io: the same
# sandbox with engine: docker (scripts/start-docker.sh).
PACKAGES=(postgresql chromium libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev ripgrep python3-venv openssl bubblewrap podman runc socat busybox-static docker.io)
missing=()
if ! command -v dpkg-query >/dev/null 2>&1; then
  log "not a Debian system: install ${PACKAGES[*]} (or your system's equivalents) yourself"
else
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    log "missing Debian packages: ${missing[*]}"
    log "install them as root (apt-get install ${missing[*]}) or run this with passwordless sudo"
    exit 1
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq >/dev/null
  "${SUDO[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- npm dependencies -------------------------------------------------------------------------
if [ ! -f node_modules/.package-lock.json ]; then
  log "installing npm dependencies (npm ci)"
  npm ci --no-audit --no-fund >&2
fi

# --- the coding-agent CLIs (test/e2e/agents-cli.test.ts) ---------------------------------------
# Claude Code, Codex, opencode, Qwen Code and Gemini CLI, pinned in test/agents-cli/package.json and
# installed there (not by the root npm ci: they are ~1.4 GB, ~40 s); again only when its lock changed.
# `npm install --no-save`, not `npm ci`: npm 11 leaves other platforms' optional binaries
# (opencode-darwin-arm64 …) out of the lock and then refuses it in `npm ci`; the lock is still used.
agents=test/agents-cli
agents_sum=$(sha256sum "$agents/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$agents/node_modules/.lock-sha256" 2>/dev/null)" != "$agents_sum" ]; then
  log "installing the agent CLIs (npm install in $agents)"
  (cd "$agents" && npm install --no-save --no-audit --no-fund >&2 && echo "$agents_sum" >node_modules/.lock-sha256)
fi
# --- end of the agent CLIs --------------------------------------------------------------------

# --- PostgreSQL -------------------------------------------------------------------------------
if [ -n "${HARNESS_RL_TEST_PG:-}" ]; then
  log "using HARNESS_RL_TEST_PG as set"
else
  scripts/start-postgres.sh # stdout: its export lines, which are ours too
fi

# --- code-server (the real VS Code the extension tests drive) ---------------------------------
scripts/setup-code-server.sh >&2

# --- Python trainer venv ----------------------------------------------------------------------
# Owned by the trainer (trainer/scripts/setup-venv.sh, idempotent); more Python set-up goes here.
if [ -x trainer/scripts/setup-venv.sh ]; then
  trainer/scripts/setup-venv.sh >&2
fi
# Arize Phoenix, the real OTLP receiver of test/e2e/telemetry-phoenix.test.ts (its own venv, ~0.9 GB;
# 713 s to install on a busy 2-core machine, nothing on later runs)
scripts/setup-phoenix-venv.sh >&2
# the Python package the task-synthesis tests mutate (inflection's sdist) and its pytest venv
scripts/setup-synth-python.sh >&2
# Ray and the worker package (the Ray-worker tests), and the container sandbox's local test image.
scripts/setup-ray.sh >&2
scripts/start-docker.sh >&2
scripts/setup-sandbox-image.sh >&2
# --- end of the Python set-up -----------------------------------------------------------------

log "ready"
