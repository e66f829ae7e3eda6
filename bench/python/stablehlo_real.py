"""The real-size programs of bench/peers (measure_xla.REAL) from their jax.export artifacts
(issue 37): each exported and serialized, compiled by insitu.compile from the bytes and run once;
its values against jax.jit's, and its bytes copied, staged and written beside the same program
compiled from JAX's HLO text (the path insitu.jax.jit takes).

    $(scripts/python-env)/bin/python bench/python/stablehlo_real.py
"""
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

import insitu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
import measure_xla  # noqa: E402


def figures(executable):
    stats = executable.stats
    return f"copied {stats['bytes_copied']} staged {stats['bytes_staged']} written {stats['bytes_written']}"


def main():
    for name, builder in measure_xla.REAL.items():
        fn, args, options = builder()[:3]
        jargs = jax.tree_util.tree_map(jnp.asarray, args)
        artifact = bytes(export.export(jax.jit(fn, **options))(*jargs).serialize())
        expected = [np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(fn)(*jargs))]
        start = time.perf_counter()
        executable = insitu.compile(artifact)
        seconds = time.perf_counter() - start
        got = executable(*[np.array(x) for x in jax.tree_util.tree_leaves(args)])
        got = got if isinstance(got, tuple) else (got,)
        error = max(float(np.max(np.abs(np.asarray(h) - w)) / max(1.0, float(np.max(np.abs(w)))))
                    for h, w in zip(got, expected))
        from_hlo = insitu.compile(jax.jit(fn, **options).lower(*jargs).as_text(dialect="hlo"))
        from_hlo(*[np.array(x) for x in jax.tree_util.tree_leaves(args)])
        print(f"{name:28s} error {error:.1e}  compile {seconds:.2f} s  artifact: {figures(executable)}  "
              f"HLO: {figures(from_hlo)}", flush=True)


if __name__ == "__main__":
    main()
