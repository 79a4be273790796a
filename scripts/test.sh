#!/usr/bin/env bash
# The whole test suite: the Rust workspace, then the Python package (built from this
# checkout into a virtual environment in target/py, with the test dependencies from PyPI)
# and its tests, Ray included. `.ci/run` calls this same script.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
  echo "error: the Python tests need Python 3.11 or later as \`$PY\` (set PYTHON=...)" >&2
  exit 1
fi
VENV=target/py
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
export PATH="$PWD/$VENV/bin:$PATH"
python -m pip install -q --upgrade "maturin>=1.7,<2" "pytest>=7" "pandas>=2" "pyarrow>=14" "numpy>=1.26" "polars>=0.20" "ray>=2.9" "matplotlib>=3.7"
# The native module, built by maturin in the `dev` profile, whose settings are the test
# profile's (Cargo.toml): it links the libraries `cargo test` built above, where the
# release profile (what `pip install ./python` uses for a user) built every dependency
# again, for minutes. Cargo's test profile itself cannot be used here: `cargo rustc
# --profile test` builds the library as a test executable, which Python cannot load.
MATURIN_PEP517_ARGS="--profile dev" python -m pip install -q --no-build-isolation --force-reinstall --no-deps ./python
python -m pytest python/tests -q
