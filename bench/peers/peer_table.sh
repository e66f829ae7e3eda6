#!/usr/bin/env bash
# The peer table (issue 5 item 3): measures insitu beside XLA:CPU on this machine, in one run,
# and writes bench/peers/RESULTS.md.
#
#   bench/peers/peer_table.sh [BUILD_DIR]        (default: build-peertable, a Release build)
#
# 1. builds insitu_measure (bench/peers/insitu_measure.cc) in BUILD_DIR;
# 2. XLA side (measure_xla.py, in the pinned virtualenv of make_corpus.sh): every corpus
#    program at its committed small shape, then the in-place programs at a large shape (a 1 GiB
#    donated array), whose HLO it dumps with JAX into BUILD_DIR/peers/large first;
#    then the real-size programs (issue 9: matmuls, a ResNet convolution, GPT-2-small decode
#    steps in two spellings), dumped the same way into BUILD_DIR/peers/real with their floors;
# 3. insitu side (insitu_measure): the same before_optimizations modules and inputs, and the
#    memory bandwidth of this machine (insitu_measure --bandwidth: a 1 GiB copy);
# 4. RESULTS.md from the JSON of steps 2-3 only;
# 5. its section "Every spelling" from bench/peers/spellings_report.py (the decode and Adam
#    spelling generators at real size, insitu.jax.jit beside jax.jit in one process).
# XLA and insitu run one after the other, never at the same time. Knobs (environment):
# PEER_COMPILE_REPS, PEER_CALLS, PEER_LARGE_COMPILE_REPS, PEER_LARGE_CALLS, PEER_REAL_CALLS;
# PEER_PYTHON_BUILD (default build): the build whose python/ step 5 imports insitu from.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-build-peertable}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
command="bench/peers/peer_table.sh${1:+ $1}"
source "$here/venv.sh"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target insitu_measure

work="$build/peers"
rm -rf "$work"
mkdir -p "$work"
export PEER_COMPILE_REPS="${PEER_COMPILE_REPS:-10}" PEER_CALLS="${PEER_CALLS:-500}"
export PEER_LARGE_COMPILE_REPS="${PEER_LARGE_COMPILE_REPS:-10}" PEER_LARGE_CALLS="${PEER_LARGE_CALLS:-10}"
export PEER_REAL_CALLS="${PEER_REAL_CALLS:-20}"

echo "== XLA:CPU, small shapes"
"$venv/bin/python" "$here/measure_xla.py" small "$work/xla_small.json"
echo "== XLA:CPU, large shapes (dumping their HLO first)"
"$venv/bin/python" "$here/measure_xla.py" dump-large "$work/large"
"$venv/bin/python" "$here/measure_xla.py" large "$work/xla_large.json"
echo "== XLA:CPU, real sizes (dumping their HLO first)"
"$venv/bin/python" "$here/measure_xla.py" dump-real "$work/real"
"$venv/bin/python" "$here/measure_xla.py" real "$work/xla_real.json"

echo "== insitu"
status=0
"$build/bench/insitu_measure" --compile-reps "$PEER_COMPILE_REPS" --calls "$PEER_CALLS" \
  "$root"/tests/data/jax/*/ > "$work/insitu.jsonl" || status=$?
"$build/bench/insitu_measure" --compile-reps "$PEER_LARGE_COMPILE_REPS" --calls "$PEER_LARGE_CALLS" \
  "$work"/large/*/ >> "$work/insitu.jsonl" || status=$?
"$build/bench/insitu_measure" --compile-reps "$PEER_LARGE_COMPILE_REPS" --calls "$PEER_REAL_CALLS" --profile 12 \
  "$work"/real/*/ >> "$work/insitu.jsonl" 2> "$work/insitu_real_profile.txt" || status=$?
"$build/bench/insitu_measure" --bandwidth --threads "$(nproc)" > "$work/bandwidth.json"
cat "$work/insitu.jsonl" "$work/bandwidth.json"

"$venv/bin/python" "$here/measure_xla.py" report "$work/xla_small.json" "$work/xla_large.json" \
  "$work/insitu.jsonl" "$here/RESULTS.md" "$command" "$work/xla_real.json" "$work/bandwidth.json"
echo "== the spelling generators, real size"
PYTHONPATH="$root/${PEER_PYTHON_BUILD:-build}/python" "$venv/bin/python" "$here/spellings_report.py" \
  --results "$here/RESULTS.md" || status=$?
echo "wrote $here/RESULTS.md"
exit "$status"
