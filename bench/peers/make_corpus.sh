#!/usr/bin/env bash
# Regenerates insitu's JAX corpus (tests/data/jax) from the programs in jax_programs.py.
#
#   bench/peers/make_corpus.sh [NAME...]       (all programs when no name is given)
#
# Creates (once) a virtualenv in bench/peers/.venv with pinned CPU jax/jaxlib from PyPI, then
# dumps every program's HLO (before and after XLA's optimizations), inputs, JAX's outputs and
# XLA's memory analysis. Only this script needs Python and the network; the tests read the
# committed files.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"

# Pinned: the corpus is regenerated bit-for-bit only with these versions.
requirements=(jax==0.4.38 jaxlib==0.4.38 numpy==2.4.6 ml_dtypes==0.7.0)

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import jax, sys; sys.exit(jax.__version__ != "0.4.38")' 2>/dev/null; then
  "$venv/bin/pip" install --quiet "${requirements[@]}"
fi

"$venv/bin/python" "$here/jax_programs.py" "$root/tests/data/jax" "$@"
du -sh "$root/tests/data/jax"
