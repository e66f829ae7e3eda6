"""A GPT-2-small-shaped decode step (12 layers, d=768, 12 heads, a 1,024-position f32 cache of
75 MB, donated) with its layers as lax.scan and the per-layer caches scanned as xs and returned
as ys: insitu.jax.jit vs jax.jit on XLA:CPU, both donating the cache, in one process, rounds
alternating, median per step, with insitu's bytes copied (bench/README.md has the figures).

    $(scripts/python-env)/bin/python bench/python/scan_decode.py [--threads 2] [--rounds 5]
"""
import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import insitu
import insitu.jax

LAYERS, WIDTH, HEADS, POSITIONS = 12, 768, 12, 1024
HEAD = WIDTH // HEADS


def step(x, weights, cache, pos):
    """x [d]; weights: per-layer stacks; cache [layers, 2, T, d] (K and V); pos: the new row."""
    def layer(h, per_layer):
        (w_qkv, w_out, w_fc, w_proj), kv = per_layer
        q, k, v = jnp.split(h @ w_qkv, 3)
        kv = kv.at[0, pos].set(k).at[1, pos].set(v)
        keys, values = kv[0].reshape(POSITIONS, HEADS, HEAD), kv[1].reshape(POSITIONS, HEADS, HEAD)
        scores = jnp.einsum("hd,thd->ht", q.reshape(HEADS, HEAD), keys) / np.sqrt(HEAD)
        scores = jnp.where(jnp.arange(POSITIONS) <= pos, scores, -jnp.inf)
        attended = jnp.einsum("ht,thd->hd", jax.nn.softmax(scores, axis=-1), values).reshape(WIDTH)
        h = h + attended @ w_out
        h = h + jax.nn.gelu(h @ w_fc) @ w_proj
        return h, kv

    return lax.scan(layer, x, (weights, cache))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    insitu.default_threads = options.threads
    rng = np.random.default_rng(0)

    def weight(*shape):
        return jnp.asarray(rng.standard_normal(shape) * 0.02, jnp.float32)

    weights = (weight(LAYERS, WIDTH, 3 * WIDTH), weight(LAYERS, WIDTH, WIDTH), weight(LAYERS, WIDTH, 4 * WIDTH),
               weight(LAYERS, 4 * WIDTH, WIDTH))
    x = weight(WIDTH)
    runners = {"jax.jit": jax.jit(step, donate_argnums=2), "insitu.jax.jit": insitu.jax.jit(step, donate_argnums=2)}
    caches = {name: jnp.zeros((LAYERS, 2, POSITIONS, WIDTH), jnp.float32) for name in runners}
    results = {}
    for name, run in runners.items():  # first calls, and the results checked against each other
        h, caches[name] = run(x, weights, caches[name], 7)
        results[name] = np.asarray(h)
    np.testing.assert_allclose(results["insitu.jax.jit"], results["jax.jit"], rtol=1e-4, atol=1e-5)
    times = {name: [] for name in runners}
    for _ in range(options.rounds):
        for name, run in runners.items():
            start = time.perf_counter()
            for position in range(8, 13):
                h, caches[name] = run(x, weights, caches[name], position)
            h.block_until_ready()
            times[name].append((time.perf_counter() - start) / 5 * 1e3)
    medians = {name: statistics.median(t) for name, t in times.items()}
    stats = runners["insitu.jax.jit"].executable(x, weights, caches["insitu.jax.jit"], 13).stats
    print(f"scan decode step (caches as xs/ys, donated): jax.jit {medians['jax.jit']:.2f} ms, insitu "
          f"{medians['insitu.jax.jit']:.2f} ms ({medians['insitu.jax.jit'] / medians['jax.jit']:.2f}x XLA); insitu "
          f"bytes_copied {stats['bytes_copied']}, copies {len(stats['copies_in_module'])}")


if __name__ == "__main__":
    main()
