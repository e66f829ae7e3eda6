"""The real-size programs of bench/peers (measure_xla.REAL) read by insitu.compile in each form
JAX writes StableHLO in: the jax.export artifact (MLIR bytecode) and the text
`jax.jit(f).lower(x).as_text()` prints (issue 37). Per program and form: the largest difference
from jax.jit's values on XLA:CPU (relative to the largest value), whether each argument JAX
aliased is aliased (and is donated in the calls, as jax.jit's caller would), bytes copied in a call, and milliseconds per call (median of --calls).

    PYTHONPATH=build/python $(scripts/python-env)/bin/python bench/python/stablehlo_forms_real.py [--calls N] [PROGRAM...]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import insitu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("programs", nargs="*", help="names from measure_xla.REAL (default: all)")
    options = parser.parse_args()

    import jax
    from jax import export

    import measure_xla

    print("| program | form | max difference | aliased params | bytes copied | ms per call |")
    print("|---|---|---:|---:|---:|---:|")
    for name, builder in measure_xla.REAL.items():
        if options.programs and name not in options.programs:
            continue
        function, args, jit_options = builder()[:3]
        host = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(args)]
        jitted = jax.jit(function, keep_unused=True, **jit_options)
        want = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(jitted(*args))]
        forms = {
            "jax.export bytecode": export.export(jitted)(*args).mlir_module_serialized,
            "StableHLO text": jitted.lower(*args).as_text(),
        }
        del args
        for form, program in forms.items():
            executable = insitu.compile(program)
            donate = [i for i, p in enumerate(executable.parameters) if p["aliased"]]
            leaves = [leaf.copy() for leaf in host]  # donated ones are written in place
            got = executable(*leaves, donate=donate)
            got = got if isinstance(got, tuple) else (got,)
            difference = max(float(np.max(np.abs(np.asarray(g).astype(np.float64) - w)) / max(1.0, float(np.max(np.abs(w)))))
                             if w.size else 0.0 for g, w in zip(got, want))
            times = []
            for _ in range(options.calls):
                start = time.perf_counter()
                executable(*leaves, donate=donate)
                times.append(time.perf_counter() - start)
            print(f"| {name} | {form} | {difference:.1e} | {len(donate)} | {executable.stats['bytes_copied']} | "
                  f"{statistics.median(times) * 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
