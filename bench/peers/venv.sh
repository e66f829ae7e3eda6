# Sourced by make_corpus.sh and peer_table.sh: sets $venv to insitu's pinned virtualenv
# (scripts/python-env, python/requirements.txt: jax/jaxlib 0.12.0.1 and the rest), made once.
# Only these scripts need JAX's network install; the C++ tests read the committed files.
venv="$("$here/../../scripts/python-env")"
