"""What insitu says about the Pallas kernels it ran: stats["pallas_kernels"] (one entry per
kernel: name, grid, steps run, bytes copied, native) and explain (each kernel in place, or the
copies that keep it from it, with their reasons); TPU-style DMA run as synchronous copies; and
a primitive insitu cannot run refused naming it and the kernel."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental.pallas import tpu as pltpu  # noqa: E402

import insitu  # noqa: E402
import insitu.jax  # noqa: E402


def plus_one_kernel(x_ref, o_ref):
    o_ref[:] = o_ref[:] + 1


def plus_one(x):
    return pl.pallas_call(plus_one_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          input_output_aliases={0: 0})(x)


def test_stats_name_the_seed_kernel_with_its_grid_and_steps():
    fn = insitu.jax.jit(plus_one, donate_argnums=[0])
    x = fn(jnp.zeros((8, 128), jnp.int32))
    executable = fn.executable(x)
    x = fn(x)
    (kernel,) = executable.stats["pallas_kernels"]
    assert kernel["name"] == "plus_one_kernel" and kernel["grid"] == "()" and kernel["aliases"] == "0->0"
    assert kernel["steps"] == 1 and kernel["runs"] == 1 and kernel["bytes_copied"] == 0 and kernel["native"]
    assert kernel["bytes_staged"] == 0  # the whole array is its block: read and written where it lies
    assert executable.stats["bytes_copied"] == 0
    np.testing.assert_array_equal(np.asarray(x), 2)
    text = executable.explain()
    assert "pallas kernel plus_one_kernel (grid (), loop %" in text
    assert "input->output aliases 0->0): in place" in text


def test_a_grid_counts_every_step_and_the_body_loops_are_not_kernels():
    def kernel(x_ref, o_ref):
        o_ref[...] = lax.fori_loop(0, 3, lambda i, v: v * 2.0, x_ref[...])

    def call(x):
        spec = pl.BlockSpec((2, 4), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(4, 2),
                              in_specs=[spec], out_specs=spec, name="times_eight")(x)

    fn = insitu.jax.jit(lambda x: call(call(x)))  # two calls of the kernel, each its own loop
    x = jnp.arange(64, dtype=jnp.float32).reshape(8, 8)
    np.testing.assert_array_equal(np.asarray(fn(x)), np.asarray(x) * 64)
    kernels = fn.executable(x).stats["pallas_kernels"]
    assert [(k["name"], k["grid"], k["runs"], k["steps"]) for k in kernels] == [("times_eight", "4x2", 2, 16)]
    # a 2x4 block of an 8x8 array is strided: each step copies its input block out (32 bytes)
    assert kernels[0]["bytes_staged"] >= 16 * 32
    assert fn.executable(x).stats["bytes_staged"] >= kernels[0]["bytes_staged"]
    explained = fn.executable(x).explain("json")["pallas_kernels"]
    assert [(k["name"], k["grid"]) for k in explained] == [("times_eight", "4x2")] * 2
    assert explained[0]["in_place"]


def test_explain_names_the_copy_when_the_aliased_input_is_still_read():
    fn = insitu.jax.jit(lambda x: (plus_one(x), x))  # not donated, and returned as well
    x = jnp.zeros((8, 128), jnp.float32)
    new, old = fn(x)
    np.testing.assert_array_equal(np.asarray(new), 1)
    np.testing.assert_array_equal(np.asarray(old), 0)
    executable = fn.executable(x)
    (kernel,) = executable.explain("json")["pallas_kernels"]
    assert not kernel["in_place"] and kernel["copies"]
    copies = {c["name"]: c for c in executable.explain("json")["copies"]}
    assert all(copies[name]["reason"] for name in kernel["copies"])
    assert executable.stats["pallas_kernels"][0]["native"]


def test_interpret_mode_is_not_reported_as_a_native_kernel():
    def call(x):
        return pl.pallas_call(plus_one_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              input_output_aliases={0: 0}, interpret=True)(x)

    fn = insitu.jax.jit(call)
    x = jnp.zeros((8, 128), jnp.float32)
    fn(x)
    assert "pallas_kernels" not in fn.executable(x).stats


def test_tpu_style_dma_runs_as_a_synchronous_copy():
    def kernel(x_hbm, o_ref, buffer, semaphore):
        copy = pltpu.make_async_copy(x_hbm.at[pl.ds(8, 8)], buffer, semaphore)
        copy.start()
        copy.wait()
        o_ref[...] = buffer[...] * 2

    def make(interpret):
        def call(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                                  in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                                  scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA],
                                  interpret=interpret)(x)
        return call

    x = jnp.arange(16 * 128, dtype=jnp.float32).reshape(16, 128)
    np.testing.assert_array_equal(np.asarray(insitu.jax.jit(make(False))(x)), np.asarray(jax.jit(make(True))(x)))


def test_a_primitive_without_a_cpu_form_is_refused_naming_it_and_the_kernel():
    def prng_kernel(seed_ref, o_ref):
        pltpu.prng_seed(seed_ref[0])
        o_ref[...] = pltpu.prng_random_bits(o_ref.shape)

    def call(seed):
        return pl.pallas_call(prng_kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.int32),
                              in_specs=[pl.BlockSpec(memory_space=pltpu.SMEM)])(seed)

    with pytest.raises(Exception, match=r"prng_kernel at .*test_pallas_explain.py:\d+\): primitive prng_seed"):
        insitu.jax.jit(call)(jnp.array([3], jnp.int32))
