# Sourced by the venv set-up scripts: pip_install_pinned PYTHON CONSTRAINTS [pip install args...] downloads
# every wheel CONSTRAINTS pins into one wheelhouse (HARNESS_RL_WHEELS, default
# ~/.cache/harness-rl/wheels) and installs from there with no index. PyPI answers without cache headers,
# so pip's own cache keeps none of these wheels (torch's CUDA build alone is ~3 GB) and a fresh checkout
# would download them all again; and a download cut off mid-file (PyPI's CDN does that to large wheels)
# fails pip after its own resumes: a second try keeps the wheels already whole and fetches the rest.
pip_install_pinned() {
  local py=$1 constraints=$2
  shift 2
  local wheels=${HARNESS_RL_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-rl/wheels}
  mkdir -p "$wheels"
  local try
  for try in 1 2 3 4; do
    if "$py" -m pip download --disable-pip-version-check -q --no-deps -d "$wheels" -r "$constraints"; then break; fi
    if [ "$try" = 4 ]; then
      echo "pip_install_pinned: could not download the wheels $constraints pins into $wheels" >&2
      return 1
    fi
    echo "pip_install_pinned: download try $try cut off, trying again" >&2
    sleep $((try * 15))
  done
  "$py" -m pip install --disable-pip-version-check -q --no-index --find-links "$wheels" -c "$constraints" "$@"
}
