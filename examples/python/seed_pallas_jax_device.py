"""The seed's Pallas kernel from JAX exactly as its author wrote it (jax.jit, donate_argnums,
input_output_aliases), run on the insitu JAX device: insitu's PJRT plugin compiles the kernel
natively on the CPU (JAX itself only interprets Pallas there) and writes the donated array in
place: same buffer, x deleted, 0 bytes copied.

    python examples/python/seed_pallas_jax_device.py

After `pip install .` JAX finds the device by itself; in a build tree (PYTHONPATH=build/python)
insitu.jax_plugin.initialize() registers it, before JAX makes its first array.
"""
from functools import partial

import insitu.jax_plugin

insitu.jax_plugin.initialize()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402


def plus_one_kernel(x_ref, o_ref):
    o_ref[:] = o_ref[:] + 1


@partial(jax.jit, donate_argnums=[0])
def plus_one_pallas(x: jax.Array):
    size = x.shape[0]  # noqa: F841 (as the seed has it)
    return pl.pallas_call(
        plus_one_kernel,
        grid=(1, 1),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0}
    )(x)


with jax.default_device(jax.devices("insitu")[0]):
    for dtype in (jnp.int32, jnp.float32, jnp.bfloat16):
        x = jnp.ones(4, dtype=dtype)
        pointer = x.unsafe_buffer_pointer()
        compiled = plus_one_pallas.lower(x).compile()
        y = plus_one_pallas(x)
        stats = insitu.jax_plugin.report(compiled)["stats"]
        print(f"y = {y} on {y.devices().pop()}; same buffer as x: {y.unsafe_buffer_pointer() == pointer}; "
              f"x deleted: {x.is_deleted()}; bytes copied: {stats['bytes_copied']}")
