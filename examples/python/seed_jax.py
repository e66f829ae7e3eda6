"""The seed's kernel from JAX: a custom call to insitu's in-place plus_one kernel with the input
donated (jax.ffi.ffi_call with input_output_aliases, as pallas_call would), run by
insitu.jax.jit. The donated array's buffer is written in place: no copy, the result is the same
memory, and the donated jax.Array is deleted as jax.jit does.

    python examples/python/seed_jax.py [PATH/TO/libinsitu_examples.so]
"""
import pathlib
import sys

import jax
import jax.numpy as jnp

import insitu
import insitu.jax

plugin = sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2] / "build/examples/libinsitu_examples.so"
insitu.load_plugin(plugin)


def plus_one(x):
    return jax.ffi.ffi_call("plus_one", jax.ShapeDtypeStruct(x.shape, x.dtype), input_output_aliases={0: 0})(x)


step = insitu.jax.jit(plus_one, donate_argnums=(0,))
x = jnp.ones(4, dtype=jnp.int32)
pointer = x.unsafe_buffer_pointer()
y = step(x)
stats = step.executable(y).stats
print(f"y = {y}; same buffer as x: {y.unsafe_buffer_pointer() == pointer}; x deleted: {x.is_deleted()}")
print(f"copies: {len(stats['copies_in_module'])}, bytes copied: {stats['bytes_copied']}")
print(step.executable(y).explain().strip())
