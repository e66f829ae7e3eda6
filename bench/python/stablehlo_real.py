"""The real-size programs of bench/peers (measure_xla.REAL) read by insitu.compile in each form JAX
writes them in (issue 37): the jax.export artifact (MLIR bytecode), the VHLO artifact XLA
serializes for a PJRT plugin at 1.16.3 and 1.22.0 (jaxlib's private serializer), the StableHLO text
`jax.jit(f).lower(x).as_text()` prints, and JAX's HLO text (the path insitu.jax.jit takes). Per
program and form: the largest difference from jax.jit's values (relative to the largest value),
compile seconds, the parameters JAX aliased (donated in the calls, as jax.jit's caller would),
bytes copied, staged and written in a call, and milliseconds per call (median of --calls).

    PYTHONPATH=build/python $(scripts/python-env)/bin/python bench/python/stablehlo_real.py [--calls N] [PROGRAM...]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np
from jax import export
from jax._src.interpreters import mlir
from jax._src.lib import _jax

import insitu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
import measure_xla  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("programs", nargs="*", help="names from measure_xla.REAL (default: all)")
    options = parser.parse_args()
    print("| program | form | max difference | compile s | donated | copied | staged | written | ms per call |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, builder in measure_xla.REAL.items():
        if options.programs and name not in options.programs:
            continue
        function, args, jit_options = builder()[:3]
        host = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(args)]
        jitted = jax.jit(function, keep_unused=True, **jit_options)
        want = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(jitted(*args))]
        lowered = jitted.lower(*args)
        bytecode = mlir.module_to_bytecode(lowered.compiler_ir("stablehlo"))
        forms = {
            "jax.export": bytes(export.export(jitted)(*args).serialize()),
            # what XLA serializes for a PJRT plugin at each version JAX 0.12 sends
            "plugin 1.16.3": _jax.mlir.serialize_portable_artifact(bytecode, "1.16.3", True),
            "plugin 1.22.0": _jax.mlir.serialize_portable_artifact(bytecode, "1.22.0", True),
            "StableHLO text": lowered.as_text(),
            "HLO text": lowered.as_text(dialect="hlo"),
        }
        del args, lowered
        for form, program in forms.items():
            start = time.perf_counter()
            executable = insitu.compile(program)
            seconds = time.perf_counter() - start
            donate = [i for i, p in enumerate(executable.parameters) if p["aliased"]]
            leaves = [leaf.copy() for leaf in host]  # the donated ones are written in place
            got = executable(*leaves, donate=donate)
            got = got if isinstance(got, tuple) else (got,)
            difference = max(float(np.max(np.abs(np.asarray(g).astype(np.float64) - w)) / max(1.0, float(np.max(np.abs(w)))))
                             if w.size else 0.0 for g, w in zip(got, want))
            times = []
            for _ in range(options.calls):
                start = time.perf_counter()
                executable(*leaves, donate=donate)
                times.append(time.perf_counter() - start)
            stats = executable.stats
            print(f"| {name} | {form} | {difference:.1e} | {seconds:.2f} | {len(donate)} | {stats['bytes_copied']} | "
                  f"{stats['bytes_staged']} | {stats['bytes_written']} | {statistics.median(times) * 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
