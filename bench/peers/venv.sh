# Sourced by make_corpus.sh and peer_table.sh: the pinned JAX virtualenv, created once.
# Sets $venv. jax 0.12 needs Python >= 3.12: PYTHON=..., else python3.12 on PATH, else pyenv's.
# Only these scripts need Python and the network; the tests read the committed files.
venv="$here/.venv"
jax_version=0.12.0.1
# Pinned: the corpus is regenerated bit-for-bit only with these versions.
requirements=(jax==$jax_version jaxlib==$jax_version numpy==2.5.5 ml_dtypes==0.7.0 scipy==1.18.1)
if [[ ! -x "$venv/bin/python" ]]; then
  python="${PYTHON:-}"
  for candidate in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python; do
    [[ -z "$python" ]] && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && python="$candidate"
  done
  [[ -n "$python" ]] || { echo "venv.sh: no Python 3.12 found; set PYTHON=/path/to/python3.12" >&2; exit 1; }
  "$python" -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import jax, sys; sys.exit(jax.__version__ != '$jax_version')" 2>/dev/null; then
  "$venv/bin/pip" install --quiet "${requirements[@]}"
fi
