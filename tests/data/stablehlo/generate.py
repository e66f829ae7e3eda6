"""Writes the StableHLO test artifacts of tests/stablehlo from small JAX programs (run by hand when
the set changes; the files are committed, so the C++ tests need no Python):

    $(scripts/python-env)/bin/python tests/data/stablehlo/generate.py

For each program: NAME.mlir, the StableHLO text JAX lowers to (jax.jit(f).lower(...).as_text()),
and NAME.vVERSION.mlirbc, the VHLO portable artifact a PJRT plugin receives (serialized by jaxlib's
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


PROGRAMS = {
    "add_one": (add_one, (jnp.zeros(4, jnp.float32),), {"donate_argnums": 0}),
    "loop_sum": (loop_sum, (jnp.zeros((3, 2), jnp.float32), jnp.int32(4)), {}),
    "cache_update": (cache_update, (jnp.zeros((2, 8, 4), jnp.float32), jnp.zeros((2, 4), jnp.float32), jnp.int32(3)),
                     {"donate_argnums": 0}),
}


def main():
    for name, (fn, args, options) in PROGRAMS.items():
        text = jax.jit(fn, **options).lower(*args).as_text()
        (HERE / f"{name}.mlir").write_text(text)
        for version in VERSIONS:
            artifact = stablehlo.serialize_portable_artifact_str(text, version)
            (HERE / f"{name}.v{version}.mlirbc").write_bytes(artifact)
            print(name, version, len(artifact), "bytes")


if __name__ == "__main__":
    main()
