"""A decode step of attention written as one Pallas kernel, compiled by insitu: each step writes
the new key and value rows into a donated KV cache (input_output_aliases, in place) and attends
over the positions written so far with a flash-attention loop (an online softmax over 128-key
blocks, up to the current position only). The caches are fed back step after step, as a
decode loop does: each step writes the new rows, and reads every block where it lies (the
only copies are 4-byte ones of the softmax's running maximum).

    python examples/python/pallas_decode_attention.py
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

import insitu.jax

HEADS, POSITIONS, WIDTH, BLOCK = 8, 1024, 64, 128


def decode_kernel(pos_ref, q_ref, k_new_ref, v_new_ref, k_in_ref, v_in_ref, o_ref, k_ref, v_ref):
    pos = pos_ref[0]
    k_ref[pl.ds(pos, 1), :] = k_new_ref[...][None]  # the new row, into the cache itself
    v_ref[pl.ds(pos, 1), :] = v_new_ref[...][None]
    q = q_ref[...] * (WIDTH ** -0.5)

    def block(j, carry):
        m, l, acc = carry
        k = k_ref[pl.ds(j * BLOCK, BLOCK), :]
        v = v_ref[pl.ds(j * BLOCK, BLOCK), :]
        s = jnp.dot(k, q)  # [BLOCK]
        s = jnp.where(j * BLOCK + lax.broadcasted_iota(jnp.int32, (BLOCK,), 0) <= pos, s, -jnp.inf)
        m_new = jnp.maximum(m, jnp.max(s))
        p = jnp.exp(s - m_new)
        scale = jnp.exp(m - m_new)
        return m_new, l * scale + jnp.sum(p), acc * scale + jnp.dot(p, v)

    start = (jnp.float32(-jnp.inf), jnp.float32(0), jnp.zeros((WIDTH,), jnp.float32))
    _, l, acc = lax.fori_loop(0, pos // BLOCK + 1, block, start)
    o_ref[...] = acc / l


def decode_step(pos, q, k_new, v_new, k_cache, v_cache):
    row = pl.BlockSpec((None, WIDTH), lambda h, p: (h, 0))
    cache = pl.BlockSpec((None, POSITIONS, WIDTH), lambda h, p: (h, 0, 0))
    spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(HEADS,),
                                        in_specs=[row, row, row, cache, cache], out_specs=[row, cache, cache])
    shapes = [jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct(k_cache.shape, k_cache.dtype),
              jax.ShapeDtypeStruct(v_cache.shape, v_cache.dtype)]
    return pl.pallas_call(decode_kernel, out_shape=shapes, grid_spec=spec,
                          input_output_aliases={4: 1, 5: 2})(pos, q, k_new, v_new, k_cache, v_cache)


def reference(pos, q, k_cache, v_cache):
    """jnp: attention of q over positions 0..pos."""
    scores = jnp.einsum("hd,htd->ht", q * (WIDTH ** -0.5), k_cache[:, :pos + 1])
    return jnp.einsum("ht,htd->hd", jax.nn.softmax(scores, axis=-1), v_cache[:, :pos + 1])


def main():
    step = insitu.jax.jit(decode_step, donate_argnums=(4, 5))
    rng = np.random.default_rng(0)
    k_cache = jnp.zeros((HEADS, POSITIONS, WIDTH), jnp.float32)
    v_cache = jnp.zeros((HEADS, POSITIONS, WIDTH), jnp.float32)
    keys, values = [], []
    for pos in range(200):
        q, k_new, v_new = (jnp.asarray(rng.standard_normal((HEADS, WIDTH)), jnp.float32) for _ in range(3))
        keys.append(k_new)
        values.append(v_new)
        position = jnp.array([pos], jnp.int32)
        executable = step.executable(position, q, k_new, v_new, k_cache, v_cache)
        out, k_cache, v_cache = step(position, q, k_new, v_new, k_cache, v_cache)
    expected = reference(pos, q, jnp.stack(keys, axis=1), jnp.stack(values, axis=1))
    error = float(jnp.max(jnp.abs(out - expected)))
    stats = executable.stats
    print(f"{pos + 1} decode steps into a donated {HEADS}x{POSITIONS}x{WIDTH} f32 KV cache "
          f"({2 * k_cache.nbytes} bytes): max |error| vs jnp {error:.2e}")
    print(f"last step: bytes copied {stats['bytes_copied']}, bytes written {stats['bytes_written']}, "
          f"kernels {[(k['name'], k['grid'], k['steps']) for k in stats['pallas_kernels']]}")
    print(executable.explain())
    # the caches are written in place: what a step writes is the new rows (and the loops' small
    # state), not the caches; the only copies are of the online softmax's scalars
    copies = executable.explain("json")["copies"]
    assert error < 1e-4 and all(copy["bytes"] <= 4 for copy in copies)
    assert stats["bytes_written"] < k_cache.nbytes // 16


if __name__ == "__main__":
    main()
