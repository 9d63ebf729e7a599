#!/usr/bin/env bash
# The Python code nobody here wrote that the task-synthesis tests mutate: inflection 0.5.1's source
# distribution from PyPI (one module, its own offline pytest suite that runs in about a second),
# unpacked under .cache/synth-python/, and a venv of its own there with pytest pinned (scripts/pins/).
# Idempotent: a stamp holding the pinned versions skips all of it when it is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=.cache/synth-python
PKG=inflection-0.5.1
SDIST_SHA256=1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417
PYTEST=pytest==8.3.4
PINS=scripts/pins/synth-python.txt
STAMP="$DIR/.stamp"
WANT="$PKG $SDIST_SHA256 $PYTEST $(sha256sum "$PINS" | cut -d' ' -f1)"
log() { echo "setup-synth-python: $*" >&2; }

if [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ]; then
  log "ready ($PKG, $PYTEST)"
  exit 0
fi
rm -rf "$DIR"
mkdir -p "$DIR"
log "creating $DIR/venv with $PYTEST"
python3 -m venv "$DIR/venv"
flock "${PIP_LOCK:-/tmp/harness-rl-pip.lock}" bash -c '. scripts/pip-wheelhouse.sh; pip_install_pinned "$@"' _ "$DIR/venv/bin/python" "$PINS" "$PYTEST"
log "downloading the $PKG source distribution"
"$DIR/venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: "${PKG/-/==}" -d "$DIR/sdist"
echo "$SDIST_SHA256  $DIR/sdist/$PKG.tar.gz" | sha256sum -c --quiet -
tar -xzf "$DIR/sdist/$PKG.tar.gz" -C "$DIR"
# the sdist ships compiled files of its docs; a repository under test holds sources only
find "$DIR/$PKG" -name __pycache__ -type d -prune -exec rm -rf {} +
echo "$WANT" >"$STAMP"
log "ready ($PKG, $PYTEST)"
