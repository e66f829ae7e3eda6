"""The seed's Pallas kernel from JAX, as its author wrote it, with jax.jit renamed to
insitu.jax.jit: the kernel compiles natively on the CPU (JAX itself only interprets Pallas
there) and the donated array is updated in place: same buffer, 0 bytes copied.

    python examples/python/seed_pallas_jax.py
"""
from functools import partial

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import insitu.jax


def plus_one_kernel(x_ref, o_ref):
    o_ref[:] = o_ref[:] + 1


@partial(insitu.jax.jit, donate_argnums=[0])
def plus_one_pallas(x: jax.Array):
    return pl.pallas_call(
        plus_one_kernel,
        grid=(1, 1),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0}
    )(x)


for dtype in (jnp.int32, jnp.float32, jnp.bfloat16):
    x = jnp.ones(4, dtype=dtype)
    pointer = x.unsafe_buffer_pointer()
    y = plus_one_pallas(x)
    stats = plus_one_pallas.executable(y).stats
    print(f"y = {y}; same buffer as x: {y.unsafe_buffer_pointer() == pointer}; x deleted: {x.is_deleted()}; "
          f"bytes copied: {stats['bytes_copied']}, copies: {len(stats['copies_in_module'])}")
