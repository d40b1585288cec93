#!/usr/bin/env bash
# Set up a fresh machine for Tuning Governor: find python3.13, create .venv with the project and its
# dev tools, and .venv-tools with the SAM CLI (kept apart: it pins its own dependency versions).
#   scripts/bootstrap.sh            # dev environment (tests, demo)
#   WITH_SDK=1 scripts/bootstrap.sh # also the SageMaker Python SDK (client-side tests, ~1 GB)
set -euo pipefail
cd "$(dirname "$0")/.."

is_py313() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' >/dev/null 2>&1; }

find_python() {
  # A pyenv shim named python3.13 can sit on PATH and still fail to run, so every candidate is tried.
  local candidate prefix
  for candidate in "${PYTHON313:-}" "$(command -v python3.13 2>/dev/null)"; do
    if [ -n "$candidate" ] && is_py313 "$candidate"; then echo "$candidate"; return 0; fi
  done
  if command -v pyenv >/dev/null 2>&1; then
    for version in 3.13.0 3.13; do
      prefix=$(pyenv prefix "$version" 2>/dev/null) || continue
      if is_py313 "$prefix/bin/python3.13"; then echo "$prefix/bin/python3.13"; return 0; fi
    done
  fi
  return 1
}

if ! PY=$(find_python); then
  cat >&2 <<'MSG'
error: python3.13 was not found.
  Tuning Governor's Lambda runtime is python3.13, and its tests run on the same version.
  Looked for: $PYTHON313, python3.13 on PATH, and `pyenv prefix 3.13.0`.
  Fix one of:  pyenv install 3.13.0   |   apt-get install python3.13   |   PYTHON313=/path/to/python3.13
MSG
  exit 1
fi
echo "bootstrap: using $PY ($("$PY" --version))"

stamp_of() { cat pyproject.toml "$@" 2>/dev/null | sha256sum | cut -c1-16; }

if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
extras="dev"
[ "${WITH_SDK:-0}" = "1" ] && extras="dev,sdk"
want="$(stamp_of)-$extras"
if [ "$(cat .venv/.bootstrap 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[${extras}]"
  echo "$want" > .venv/.bootstrap
fi

if [ "${WITH_SAM:-1}" = "1" ]; then
  if [ ! -x .venv-tools/bin/sam ]; then
    "$PY" -m venv .venv-tools
    .venv-tools/bin/python -m pip install --quiet --upgrade pip
    .venv-tools/bin/python -m pip install --quiet "aws-sam-cli>=1.140,<2"
  fi
fi
echo "bootstrap: ready (.venv: $(.venv/bin/python --version); extras: $extras)"
