"""Pallas layer norm and softmax (4096x1024 f32, 256-row blocks) against jnp on XLA:CPU, each
called back to back (no alternation with other backends: XLA's time depends on what ran just
before it, so pallas_kernels.py's alternating rounds can flatter insitu). Prints the median and
the best of 40 calls per backend, twice.

    PYTHONPATH=build/python $(scripts/python-env)/bin/python bench/python/pallas_steady.py
"""
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import insitu.jax
import pallas_kernels as kernels


def timed(fn, calls=40):
    jax.block_until_ready(fn())
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, min(times) * 1e3


def main():
    rows = jnp.asarray(np.random.default_rng(0).standard_normal((4096, 1024)), jnp.float32)
    for name, op in (("layernorm", kernels.jnp_layernorm), ("softmax", kernels.jnp_softmax)):
        two = insitu.jax.jit(kernels.by_rows(op, 256, False))
        one = insitu.jax.jit(kernels.by_rows(op, 256, False), threads=1)
        plain = jax.jit(op)
        for _ in range(2):
            (a, a_best), (b, b_best), (c, c_best) = (timed(lambda: two(rows)), timed(lambda: one(rows)),
                                                     timed(lambda: plain(rows)))
            print(f"{name:10s} insitu {insitu.default_threads} threads {a:.2f} ms (best {a_best:.2f})  "
                  f"1 thread {b:.2f} ({b_best:.2f})  jnp on XLA {c:.2f} ({c_best:.2f})  "
                  f"insitu/jnp {a / c:.2f}x  1 thread/{insitu.default_threads} {b / a:.2f}x", flush=True)


if __name__ == "__main__":
    main()
