"""Pallas kernels on a CPU: insitu (insitu.jax.jit, interpret=False) vs JAX's interpret mode on
XLA:CPU (jax.jit, interpret=True) vs the same op in jnp under jax.jit, in one process, rounds
alternating, median per call (bench/README.md has the figures):

  matmul-512 / matmul-128   1024^3 f32, a TPU-style blocked kernel (grid i, j, k; the output
                            block accumulates over k) with blocks of 512 and 128; beside it
                            insitu's own dot (jnp's a @ b under insitu.jax.jit)
  layernorm-256             rows of 4096 x 1024 f32, 256 rows a block
  softmax-256               rows of 4096 x 1024 f32, 256 rows a block
  decode-attention          one query per head over a 4,096-position cache (8 heads of 64), a
                            head a grid step
  flash-attention           forward, B=1, H=8, S=2048, D=64: a grid step per head and 128 query
                            rows, an online softmax over 128-key blocks in a fori_loop
  flash-attn-tpu            the same size, causal, written as published TPU kernels are
                            (flash_attention_tpu: a 4-D grid over 128 x 128 blocks, VMEM scratch
                            under pl.when, dimension_semantics); no interpret-mode column
  kv-update                 a 256-position chunk of each of 16 layers written into a donated
                            1 GiB f32 cache [16, 16384, 1024] through an aliased output whose
                            index map reads the position (scalar prefetch); beside it the time
                            numpy's copy of the written bytes takes (the bandwidth floor)

    $(scripts/python-env)/bin/python bench/python/pallas_kernels.py [--threads 2] [--rounds 5]
"""
import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

import insitu
import insitu.jax


def matmul(block, interpret):
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    def call(x, y):
        n = x.shape[0]
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((n, n), jnp.float32),
                              grid=(n // block, n // block, n // block),
                              in_specs=[pl.BlockSpec((block, block), lambda i, j, k: (i, k)),
                                        pl.BlockSpec((block, block), lambda i, j, k: (k, j))],
                              out_specs=pl.BlockSpec((block, block), lambda i, j, k: (i, j)), interpret=interpret)(x, y)
    return call


def jnp_layernorm(x):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5)


def jnp_softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def by_rows(row_op, rows, interpret):
    """A Pallas kernel applying row_op to blocks of `rows` whole rows, a block a grid step."""
    def kernel(x_ref, o_ref):
        o_ref[...] = row_op(x_ref[...])

    def call(x):
        spec = pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // rows,),
                              in_specs=[spec], out_specs=spec, interpret=interpret)(x)
    return call


def decode_attention(interpret):
    def kernel(q_ref, k_ref, v_ref, o_ref):
        scores = jnp.dot(k_ref[...], q_ref[...]) * 0.125  # [T]
        p = jnp.exp(scores - jnp.max(scores))
        o_ref[...] = jnp.dot(p / jnp.sum(p), v_ref[...])

    def call(q, k, v):  # q [H, D], k and v [H, T, D]
        heads, positions, width = k.shape
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype), grid=(heads,),
                              in_specs=[pl.BlockSpec((None, width), lambda h: (h, 0)),
                                        pl.BlockSpec((None, positions, width), lambda h: (h, 0, 0)),
                                        pl.BlockSpec((None, positions, width), lambda h: (h, 0, 0))],
                              out_specs=pl.BlockSpec((None, width), lambda h: (h, 0)), interpret=interpret)(q, k, v)
    return call


def jnp_decode_attention(q, k, v):
    scores = jnp.einsum("hd,htd->ht", q, k) * 0.125
    return jnp.einsum("ht,htd->hd", jax.nn.softmax(scores, axis=-1), v)


def flash_attention(interpret, block_q=128, block_k=128):
    def kernel(q_ref, k_ref, v_ref, o_ref):
        q = q_ref[...] * 0.125  # [block_q, D]
        rows, width = q.shape

        def body(j, carry):
            m, l, acc = carry
            k = k_ref[pl.ds(j * block_k, block_k), :]
            v = v_ref[pl.ds(j * block_k, block_k), :]
            s = jnp.dot(q, k.T, preferred_element_type=jnp.float32)
            m_new = jnp.maximum(m, jnp.max(s, axis=-1))
            p = jnp.exp(s - m_new[:, None])
            scale = jnp.exp(m - m_new)
            return m_new, l * scale + jnp.sum(p, axis=-1), acc * scale[:, None] + jnp.dot(p, v)

        start = (jnp.full((rows,), -jnp.inf, jnp.float32), jnp.zeros((rows,), jnp.float32),
                 jnp.zeros((rows, width), jnp.float32))
        m, l, acc = lax.fori_loop(0, k_ref.shape[0] // block_k, body, start)
        o_ref[...] = acc / l[:, None]

    def call(q, k, v):  # [H, S, D] each
        heads, length, width = q.shape
        q_spec = pl.BlockSpec((None, block_q, width), lambda h, i: (h, i, 0))
        kv_spec = pl.BlockSpec((None, length, width), lambda h, i: (h, 0, 0))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype), grid=(heads, length // block_q),
                              in_specs=[q_spec, kv_spec, kv_spec], out_specs=q_spec, interpret=interpret)(q, k, v)
    return call


def flash_attention_tpu(interpret, causal=True, block_q=128, block_k=128):
    """A forward flash attention written as published TPU kernels write it: a 4-D grid (batch,
    head, query block, key block), the running max, sum and output in VMEM scratch reset under
    pl.when at the first key block and written out at the last, key blocks past the diagonal
    skipped under pl.when, dimension_semantics declaring the key axis "arbitrary"."""
    def kernel(q_ref, k_ref, v_ref, o_ref, m_scratch, l_scratch, acc_scratch):
        qi, ki = pl.program_id(2), pl.program_id(3)

        @pl.when(ki == 0)
        def _():
            m_scratch[...] = jnp.full(m_scratch.shape, -jnp.inf, jnp.float32)
            l_scratch[...] = jnp.zeros(l_scratch.shape, jnp.float32)
            acc_scratch[...] = jnp.zeros(acc_scratch.shape, jnp.float32)

        def step():
            width = q_ref.shape[-1]
            s = lax.dot_general(q_ref[...].astype(jnp.float32) * (1.0 / np.sqrt(width)),
                                k_ref[...].astype(jnp.float32), (((1,), (1,)), ((), ())),
                                preferred_element_type=jnp.float32)
            if causal:
                row = qi * block_q + lax.broadcasted_iota(jnp.int32, s.shape, 0)
                column = ki * block_k + lax.broadcasted_iota(jnp.int32, s.shape, 1)
                s = jnp.where(column <= row, s, -1e30)
            m_old = m_scratch[...]
            m_new = jnp.maximum(m_old, s.max(axis=-1, keepdims=True))
            p = jnp.exp(s - m_new)
            alpha = jnp.exp(m_old - m_new)
            l_scratch[...] = alpha * l_scratch[...] + p.sum(axis=-1, keepdims=True)
            acc_scratch[...] = alpha * acc_scratch[...] + jnp.dot(
                p, v_ref[...].astype(jnp.float32), preferred_element_type=jnp.float32)
            m_scratch[...] = m_new

        if causal:
            pl.when(ki * block_k <= qi * block_q + block_q - 1)(step)
        else:
            step()

        @pl.when(ki == pl.num_programs(3) - 1)
        def _():
            o_ref[...] = (acc_scratch[...] / l_scratch[...]).astype(o_ref.dtype)

    def call(q, k, v):  # [B, H, S, D] each
        batch, heads, length, width = q.shape
        q_spec = pl.BlockSpec((None, None, block_q, width), lambda b, h, i, j: (b, h, i, 0))
        k_spec = pl.BlockSpec((None, None, block_k, width), lambda b, h, i, j: (b, h, j, 0))
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
            grid=(batch, heads, length // block_q, length // block_k), in_specs=[q_spec, k_spec, k_spec],
            out_specs=q_spec,
            scratch_shapes=[pltpu.VMEM((block_q, 1), jnp.float32), pltpu.VMEM((block_q, 1), jnp.float32),
                            pltpu.VMEM((block_q, width), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
            interpret=interpret)(q, k, v)
    return call


def jnp_causal_attention(q, k, v):  # [B, H, S, D]
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    s = jnp.where(jnp.tril(jnp.ones(s.shape[-2:], bool)), s, -1e30)
    return jax.nn.softmax(s, axis=-1) @ v


def jnp_attention(q, k, v):
    return jax.nn.softmax(jnp.einsum("hqd,hkd->hqk", q * 0.125, k), axis=-1) @ v


def kv_update(interpret, chunk=256):
    def kernel(pos_ref, new_ref, cache_ref, out_ref):
        out_ref[...] = new_ref[...]

    def call(pos, new, cache):  # new [L, chunk, D] into cache [L, T, D] at position pos[0] (a chunk multiple)
        layers, _, width = cache.shape
        block = pl.BlockSpec((None, chunk, width), lambda l, p: (l, p[0] // chunk, 0))
        spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(layers,),
            in_specs=[pl.BlockSpec((None, chunk, width), lambda l, p: (l, 0, 0)), pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=block)
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(cache.shape, cache.dtype), grid_spec=spec,
                              input_output_aliases={2: 0}, interpret=interpret)(pos, new, cache)
    return call


def triton_axpy(interpret, block=1 << 16):
    """Triton's style: no BlockSpec (every ref the whole array), each step its slice by pl.ds."""
    def kernel(x_ref, y_ref, o_ref):
        at = pl.ds(pl.program_id(0) * block, block)
        o_ref[at] = 2.5 * x_ref[at] + y_ref[at]

    def call(x, y):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // block,),
                              interpret=interpret)(x, y)
    return call


def median_ms(fn, rounds, calls):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            jax.block_until_ready(fn())
        times.append((time.perf_counter() - start) / calls * 1e3)
    return statistics.median(times)


def compare(name, runs, rounds, calls, view=lambda result: result):
    """runs: label -> zero-argument callable; the first is the one the others are checked against
    (through `view` of each result). Returns the median ms per label."""
    results = {label: np.asarray(view(run())) for label, run in runs.items()}
    reference = next(iter(results.values()))
    for label, value in results.items():
        np.testing.assert_allclose(value, reference, rtol=2e-3, atol=2e-3, err_msg=f"{name}: {label}")
    times = {label: [] for label in runs}
    for _ in range(rounds):
        for label, run in runs.items():
            times[label].append(median_ms(run, 1, calls))
    medians = {label: statistics.median(t) for label, t in times.items()}
    line = f"{name:14s}" + "".join(f"  {label} {ms:9.3f} ms" for label, ms in medians.items())
    insitu_ms = medians["insitu"]
    line += f"  | insitu/jnp {insitu_ms / medians['jnp']:.2f}x"
    if "interpret" in medians:
        line += f", interpret/insitu {medians['interpret'] / insitu_ms:.1f}x"
    if "insitu-1t" in medians:
        line += f", insitu 1 thread/{insitu.default_threads} {medians['insitu-1t'] / insitu_ms:.2f}x"
    if "insitu-dot" in medians:
        line += f", insitu/insitu's own dot {insitu_ms / medians['insitu-dot']:.2f}x"
    if "memcpy" in medians:
        line += f", insitu/memcpy {insitu_ms / medians['memcpy']:.2f}x"
    print(line, flush=True)
    return medians


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    insitu.default_threads = options.threads
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((1024, 1024)), jnp.float32)
    y = jnp.asarray(rng.standard_normal((1024, 1024)), jnp.float32)
    print(f"jax {jax.__version__}, insitu threads {options.threads}, median of {options.rounds} alternating rounds")
    dot = jax.jit(lambda a, b: a @ b)
    own_dot = insitu.jax.jit(lambda a, b: a @ b)
    for block, calls in ((512, 3), (128, 1)):
        native, interpreted = insitu.jax.jit(matmul(block, False)), jax.jit(matmul(block, True))
        one = insitu.jax.jit(matmul(block, False), threads=1)
        compare(f"matmul-{block}", {"jnp": lambda: dot(x, y), "insitu": lambda: native(x, y),
                                    "insitu-1t": lambda: one(x, y), "insitu-dot": lambda: own_dot(x, y),
                                    "interpret": lambda: interpreted(x, y)},
                options.rounds, calls)
    rows = jnp.asarray(rng.standard_normal((4096, 1024)), jnp.float32)
    for name, row_op, plain in (("layernorm-256", jnp_layernorm, jax.jit(jnp_layernorm)),
                                ("softmax-256", jnp_softmax, jax.jit(lambda x: jax.nn.softmax(x, axis=-1)))):
        native, interpreted = insitu.jax.jit(by_rows(row_op, 256, False)), jax.jit(by_rows(row_op, 256, True))
        one = insitu.jax.jit(by_rows(row_op, 256, False), threads=1)
        compare(name, {"jnp": lambda: plain(rows), "insitu": lambda: native(rows), "insitu-1t": lambda: one(rows),
                       "interpret": lambda: interpreted(rows)}, options.rounds, 3)
    flat_x, flat_y = (jnp.asarray(rng.standard_normal(1 << 22), jnp.float32) for _ in range(2))
    native, interpreted = insitu.jax.jit(triton_axpy(False)), jax.jit(triton_axpy(True))
    one = insitu.jax.jit(triton_axpy(False), threads=1)
    plain = jax.jit(lambda a, b: 2.5 * a + b)
    compare("triton-axpy", {"jnp": lambda: plain(flat_x, flat_y), "insitu": lambda: native(flat_x, flat_y),
                            "insitu-1t": lambda: one(flat_x, flat_y), "interpret": lambda: interpreted(flat_x, flat_y)},
            options.rounds, 3)
    q = jnp.asarray(rng.standard_normal((8, 64)), jnp.float32)
    k, v = (jnp.asarray(rng.standard_normal((8, 4096, 64)), jnp.float32) for _ in range(2))
    native, interpreted = insitu.jax.jit(decode_attention(False)), jax.jit(decode_attention(True))
    one = insitu.jax.jit(decode_attention(False), threads=1)
    plain = jax.jit(jnp_decode_attention)
    compare("decode-attention", {"jnp": lambda: plain(q, k, v), "insitu": lambda: native(q, k, v),
                                 "insitu-1t": lambda: one(q, k, v), "interpret": lambda: interpreted(q, k, v)},
            options.rounds, 5)
    q, k, v = (jnp.asarray(rng.standard_normal((8, 2048, 64)), jnp.float32) for _ in range(3))
    native, interpreted = insitu.jax.jit(flash_attention(False)), jax.jit(flash_attention(True))
    one = insitu.jax.jit(flash_attention(False), threads=1)
    plain = jax.jit(jnp_attention)
    compare("flash-attention", {"jnp": lambda: plain(q, k, v), "insitu": lambda: native(q, k, v),
                                "insitu-1t": lambda: one(q, k, v), "interpret": lambda: interpreted(q, k, v)},
            options.rounds, 1)
    # the TPU-style kernel, causal, at the same size (interpret mode left out: 2,048 grid steps,
    # each copying the whole q, k, v and output through XLA, take seconds)
    q4, k4, v4 = (a[None] for a in (q, k, v))
    tpu = insitu.jax.jit(flash_attention_tpu(False))
    tpu_one = insitu.jax.jit(flash_attention_tpu(False), threads=1)
    causal = jax.jit(jnp_causal_attention)
    compare("flash-attn-tpu", {"jnp": lambda: causal(q4, k4, v4), "insitu": lambda: tpu(q4, k4, v4),
                               "insitu-1t": lambda: tpu_one(q4, k4, v4)}, options.rounds, 1)
    for label, fn, args in (("matmul-128", insitu.jax.jit(matmul(128, False)), (x, y)),
                            ("flash-attention", native, (q, k, v)), ("flash-attn-tpu", tpu, (q4, k4, v4))):
        jax.block_until_ready(fn(*args))
        (kernel,) = fn.executable(*args).stats["pallas_kernels"]
        print(f"  {label} insitu: grid {kernel['grid']}, parallel axes {kernel['parallel_axes']}"
              + (f" ({kernel['in_order_because']})" if kernel["in_order_because"] else "")
              + f", bytes copied {kernel['bytes_copied']}, staged {kernel['bytes_staged']}")
    # the KV-cache chunk: each backend's 1 GiB cache is donated and fed back, as a decode loop does
    layers, positions, width, chunk = 16, 16384, 1024, 256
    caches = {label: jnp.zeros((layers, positions, width), jnp.float32) for label in ("jnp", "insitu", "interpret")}
    pos, new = jnp.array([4096], jnp.int32), jnp.ones((layers, chunk, width), jnp.float32)
    steps = {"jnp": jax.jit(lambda p, n, c: lax.dynamic_update_slice(c, n, (0, p[0], 0)), donate_argnums=2),
             "insitu": insitu.jax.jit(kv_update(False, chunk), donate_argnums=2),
             "interpret": jax.jit(kv_update(True, chunk), donate_argnums=2)}

    def stepper(label):
        def run():
            caches[label] = steps[label](pos, new, caches[label])
            return caches[label]
        return run

    runs = {label: stepper(label) for label in steps if label != "interpret"}
    source = np.ones(layers * chunk * width, np.float32)
    target = np.empty_like(source)
    runs["memcpy"] = lambda: (np.copyto(target, source), target.reshape(layers, chunk, width))[1]  # the bandwidth floor
    chunk_view = lambda cache: cache[:, 4096:4096 + chunk] if cache.shape[1] == positions else cache  # noqa: E731
    medians = compare("kv-update", runs, options.rounds, 5, view=chunk_view)
    # interpret mode rewrites the whole 1 GiB cache per step, which slowed the others' memory
    # when it ran between them (insitu 3.6 ms instead of 1.1): timed apart, after them
    interpret = stepper("interpret")
    np.testing.assert_allclose(np.asarray(chunk_view(interpret())), np.asarray(chunk_view(runs["insitu"]())))
    interpret_ms = median_ms(interpret, options.rounds, 2)
    print(f"{'':14s}  interpret {interpret_ms:9.3f} ms  | interpret/insitu {interpret_ms / medians['insitu']:.1f}x")
    stats = steps["insitu"].executable(pos, new, caches["insitu"]).stats
    print(f"  kv-update insitu: bytes_copied {stats['bytes_copied']}, bytes_written {stats['bytes_written']} "
          f"of a {layers * positions * width * 4} byte cache; kernels {stats.get('pallas_kernels')}")


if __name__ == "__main__":
    main()
