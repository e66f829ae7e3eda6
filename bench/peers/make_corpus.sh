#!/usr/bin/env bash
# Regenerates insitu's JAX corpus (tests/data/jax) from the programs in jax_programs.py.
#
#   bench/peers/make_corpus.sh [NAME...]       (all programs when no name is given)
#
# Creates (once) the pinned virtualenv of venv.sh (CPU jax/jaxlib 0.12 from PyPI), then
# dumps every program's HLO (before and after XLA's optimizations), inputs, JAX's outputs and
# XLA's memory analysis. Only this script needs Python and the network; the tests read the
# committed files.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$here/venv.sh"

"$venv/bin/python" "$here/jax_programs.py" "$root/tests/data/jax" "$@"
du -sh "$root/tests/data/jax"
