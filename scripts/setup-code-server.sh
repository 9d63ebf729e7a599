#!/usr/bin/env bash
# Installs code-server 4.100.3 (VS Code's server build, Node 20 engine) and playwright-core into
# .cache/code-server, outside the root package so `npm ci` never runs its postinstall.
# Idempotent: a finished install leaves .cache/code-server/.done and is skipped next time.
# Steps follow shared/notes/code-server.md (Debian packages: libkrb5-dev libxkbfile-dev
# libsecret-1-dev libx11-dev ripgrep chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${HARNESS_RL_CODE_SERVER_DIR:-$PWD/.cache/code-server}"
VERSION=4.100.3

if [ -f "$DIR/.done" ] && [ "$(cat "$DIR/.done")" = "$VERSION" ] && [ -x "$DIR/node_modules/.bin/code-server" ]; then
  echo "code-server $VERSION already set up in $DIR"
  exit 0
fi

mkdir -p "$DIR"
cd "$DIR"
[ -f package.json ] || npm init -y >/dev/null
npm install --no-audit --no-fund --ignore-scripts "code-server@$VERSION" playwright-core
(
  cd node_modules/code-server/lib/vscode
  npm install --no-audit --no-fund --omit=dev --ignore-scripts
  npm_config_yes=true npm rebuild kerberos node-pty @parcel/watcher @vscode/spdlog \
    native-watchdog @vscode/deviceid
  mkdir -p node_modules/@vscode/ripgrep/bin
  cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
  cd extensions
  npm install --no-audit --no-fund --omit=dev --ignore-scripts
)
npm rebuild argon2
echo "$VERSION" > .done
echo "code-server $VERSION set up in $DIR"
