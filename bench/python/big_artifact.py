"""Writes a jax.export artifact holding one big f32 weight (`x @ w`, w closed over: the weight is
a constant of the module), for bench/stablehlo_read_bench.cc.

    $(scripts/python-env)/bin/python bench/python/big_artifact.py OUT.jax_export [MEGABYTES=500]
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import export


def main():
    out, megabytes = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 500.0
    side = int((megabytes * 1e6 / 4) ** 0.5)
    w = jnp.asarray(np.random.RandomState(0).standard_normal((side, side)).astype(np.float32))
    artifact = export.export(jax.jit(lambda x: x @ w))(jax.ShapeDtypeStruct((1, side), jnp.float32))
    data = artifact.serialize()
    with open(out, "wb") as file:
        file.write(data)
    print(f"{out}: {len(data) / 1e6:.1f} MB (w f32[{side},{side}])")


if __name__ == "__main__":
    main()
