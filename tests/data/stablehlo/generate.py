"""Writes the StableHLO test artifacts of tests/stablehlo from small JAX programs (run by hand when
the set changes; the files are committed, so the C++ tests need no Python):

    $(scripts/python-env)/bin/python tests/data/stablehlo/generate.py

For each program: NAME.mlir, the StableHLO text JAX lowers to (jax.jit(f).lower(...).as_text()),
NAME.hlo, the HLO text JAX converts it to (the path insitu.jax.jit takes today), and NAME.vVERSION.mlirbc, the VHLO portable artifact a PJRT plugin receives (serialized by jaxlib's
own StableHLO at the two versions JAX 0.12 sends: 1.22.0 when the plugin asks for the current one,
1.16.3 otherwise).
"""
import pathlib

import jax
import jax.numpy as jnp
from jax import lax
from jaxlib.mlir.dialects import stablehlo

HERE = pathlib.Path(__file__).parent
VERSIONS = ("1.22.0", "1.16.3")


def add_one(a):
    return a + 1


def loop_sum(a, n):
    def body(i, carry):
        return carry + a * i.astype(a.dtype)
    total = lax.fori_loop(0, n, body, jnp.zeros_like(a))
    return jnp.sum(total, axis=0), total.max()


def cache_update(cache, row, pos):
    return cache.at[:, pos].set(row)


def branches(x, k):
    y = lax.cond(k > 0, lambda v: v * 2.0, lambda v: v - x.sum(), x)
    z = lax.switch(k, [jnp.sin, jnp.cos, lambda v: jnp.tanh(v) + y], x)
    return y, z


def layer(x, w, idx):
    h = jnp.dot(x, w)
    g = jnp.take(h, idx, axis=1)
    s = jnp.sort(g, axis=-1)
    p = jnp.pad(s, ((1, 0), (0, 2)))
    m = lax.reduce_window(p, -jnp.inf, lax.max, (2, 2), (1, 1), "SAME")
    t = jnp.transpose(m)[::2, 1:3]
    c = jnp.concatenate([t, -t], axis=0)
    return jnp.where(c > 0, c, jnp.exp(c)), lax.dynamic_slice(h, (idx[0], 1), (2, 2)), jnp.arange(3) * idx[1]


def masks(x, flags):
    """Boolean constants of 3 (one packed byte, 0x05), 1 and 16 elements beside the argument."""
    small = jnp.array([True, False, True])
    wide = jnp.array([i % 3 == 0 for i in range(16)])
    return flags & small, jnp.where(wide, x, -x), jnp.array([True]) & flags[:1]


PROGRAMS = {
    "masks": (masks, (jnp.zeros(16, jnp.float32), jnp.zeros(3, bool)), {}),
    "branches": (branches, (jnp.zeros((3,), jnp.float32), jnp.int32(1)), {}),
    "layer": (layer, (jnp.zeros((4, 5), jnp.float32), jnp.zeros((5, 6), jnp.float32), jnp.zeros((3,), jnp.int32)), {}),
    "add_one": (add_one, (jnp.zeros(4, jnp.float32),), {"donate_argnums": 0}),
    "loop_sum": (loop_sum, (jnp.zeros((3, 2), jnp.float32), jnp.int32(4)), {}),
    "cache_update": (cache_update, (jnp.zeros((2, 8, 4), jnp.float32), jnp.zeros((2, 4), jnp.float32), jnp.int32(3)),
                     {"donate_argnums": 0}),
}


def main():
    for name, (fn, args, options) in PROGRAMS.items():
        lowered = jax.jit(fn, **options).lower(*args)
        text = lowered.as_text()
        (HERE / f"{name}.mlir").write_text(text)
        (HERE / f"{name}.hlo").write_text(lowered.as_text(dialect="hlo"))
        for version in VERSIONS:
            artifact = stablehlo.serialize_portable_artifact_str(text, version)
            (HERE / f"{name}.v{version}.mlirbc").write_bytes(artifact)
            print(name, version, len(artifact), "bytes")


if __name__ == "__main__":
    main()
