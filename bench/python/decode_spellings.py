"""One decode step written many ways in JAX (issue 36, "a generator of spellings"): does insitu
copy 0 bytes for the donated KV-cache update however the program spells it?

Every spelling is fn(params, state, x, pos) -> (h, new state) with the state donated, and computes
the same thing: per layer, project x to q/k/v, write the new k/v row at `pos`, attend over the
cache positions <= pos, add the attention output and an MLP to the residual. Each one is run by
jax.jit (XLA:CPU) and insitu.jax.jit, both donating the state; insitu's values are checked against
XLA's (within 1e-5 of each output's scale), XLA's against a float64 NumPy reference, and per
spelling one line is printed: values ok, insitu's bytes_copied and copies_executed for one step,
its bytes_staged and bytes_written (a slice materialized to scratch is no copy instruction but
moves the bytes all the same), the median ms per step of each, and, where insitu copies, the
first lines of explain() naming the copies and their reasons. With --xla-module, the copies in
XLA's own optimized module are counted and that module is handed to insitu.compile (its explain).

    $(scripts/python-env)/bin/python bench/python/decode_spellings.py [--size small|gpt2]
        [--only NAME,...] [--threads 2] [--rounds 5] [--steps 4] [--xla-module]
"""
import argparse
import re
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import insitu
import insitu.jax

SIZES = {  # layers, heads, head dim, cache positions
    "small": (2, 2, 8, 16),
    "gpt2": (12, 12, 64, 1024),
}
LAYERS, HEADS, HEAD, POSITIONS = SIZES["small"]
WIDTH = HEADS * HEAD


def set_size(name):
    global LAYERS, HEADS, HEAD, POSITIONS, WIDTH
    LAYERS, HEADS, HEAD, POSITIONS = SIZES[name]
    WIDTH = HEADS * HEAD


# --- the shared arithmetic of one layer -------------------------------------------------------

def layer_weights(params, layer):
    """The weights of one layer; `layer` may be a Python int or a traced index."""
    return tuple(w[layer] for w in params)


def project(h, weights):
    """q, k, v of the token, each [heads, head dim]."""
    q, k, v = jnp.split(h @ weights[0], 3)
    return q.reshape(HEADS, HEAD), k.reshape(HEADS, HEAD), v.reshape(HEADS, HEAD)


def finish(h, weights, q, keys, values, pos):
    """Attention of q over keys/values [heads, T, head dim] at positions <= pos, then the MLP."""
    _, w_out, w_fc, w_proj = weights
    scores = jnp.einsum("hd,htd->ht", q, keys) / np.sqrt(HEAD)
    scores = jnp.where(jnp.arange(POSITIONS) <= pos, scores, -jnp.inf)
    attended = jnp.einsum("ht,htd->hd", jax.nn.softmax(scores, axis=-1), values).reshape(WIDTH)
    h = h + attended @ w_out
    return h + jax.nn.gelu(h @ w_fc) @ w_proj


def layer_on_slices(h, weights, keys, values, pos, write):
    """One layer over its own cache slices [heads, T, head dim], written by `write(cache, row)`."""
    q, k, v = project(h, weights)
    keys, values = write(keys, k), write(values, v)
    return finish(h, weights, q, keys, values, pos), keys, values


# --- the spellings: state from/to the canonical (k, v) caches [layers, heads, T, head dim] -----

def stacked(k, v):
    return (k, v)


def unstacked(state):
    return state


def scan_carry(params, state, x, pos):
    """lax.scan over layers, both whole caches in the carry, the row written at a dynamic layer."""
    def layer(carry, per_layer):
        h, kc, vc = carry
        weights, index = per_layer
        q, k, v = project(h, weights)
        kc, vc = kc.at[index, :, pos].set(k), vc.at[index, :, pos].set(v)
        return (finish(h, weights, q, kc[index], vc[index], pos), kc, vc), None

    (h, kc, vc), _ = lax.scan(layer, (x, *state), (params, jnp.arange(LAYERS)))
    return h, (kc, vc)


def scan_xs_ys(params, state, x, pos):
    """lax.scan over layers, the caches scanned as xs and returned as ys."""
    def layer(h, per_layer):
        weights, keys, values = per_layer
        h, keys, values = layer_on_slices(h, weights, keys, values, pos, lambda c, r: c.at[:, pos].set(r))
        return h, (keys, values)

    h, (kc, vc) = lax.scan(layer, x, (params, *state))
    return h, (kc, vc)


def fori_dus(params, state, x, pos):
    """lax.fori_loop over layers, lax.dynamic_update_slice at (layer, 0, pos, 0)."""
    def layer(index, carry):
        h, kc, vc = carry
        weights = layer_weights(params, index)
        q, k, v = project(h, weights)
        zero = jnp.int32(0)
        start = (index, zero, jnp.asarray(pos, jnp.int32), zero)
        kc = lax.dynamic_update_slice(kc, k[None, :, None, :], start)
        vc = lax.dynamic_update_slice(vc, v[None, :, None, :], start)
        keys = lax.dynamic_index_in_dim(kc, index, keepdims=False)
        values = lax.dynamic_index_in_dim(vc, index, keepdims=False)
        return finish(h, weights, q, keys, values, pos), kc, vc

    h, kc, vc = lax.fori_loop(0, LAYERS, layer, (x, *state))
    return h, (kc, vc)


def unrolled_stack(params, state, x, pos):
    """A Python loop over layers on slices of the caches, the new caches made by jnp.stack."""
    kc, vc = state
    h, keys_out, values_out = x, [], []
    for index in range(LAYERS):
        h, keys, values = layer_on_slices(h, layer_weights(params, index), kc[index], vc[index], pos,
                                          lambda c, r: c.at[:, pos].set(r))
        keys_out.append(keys)
        values_out.append(values)
    return h, (jnp.stack(keys_out), jnp.stack(values_out))


def per_layer_args(params, state, x, pos):
    """Per-layer caches as separate leaves: a tuple of (k, v) per layer."""
    h, new_state = x, []
    for index, (keys, values) in enumerate(state):
        h, keys, values = layer_on_slices(h, layer_weights(params, index), keys, values, pos,
                                          lambda c, r: c.at[:, pos].set(r))
        new_state.append((keys, values))
    return h, tuple(new_state)


def per_layer_from(k, v):
    return tuple((k[i], v[i]) for i in range(LAYERS))


def per_layer_to(state):
    return np.stack([s[0] for s in state]), np.stack([s[1] for s in state])


def at_set(params, state, x, pos):
    """A Python loop over layers, the whole cache written by .at[l, :, pos].set(row)."""
    kc, vc = state
    h = x
    for index in range(LAYERS):
        weights = layer_weights(params, index)
        q, k, v = project(h, weights)
        kc, vc = kc.at[index, :, pos].set(k), vc.at[index, :, pos].set(v)
        h = finish(h, weights, q, kc[index], vc[index], pos)
    return h, (kc, vc)


def update_index_in_dim(params, state, x, pos):
    """A Python loop; lax.dynamic_update_index_in_dim of the row into the layer's slice and of
    that slice back into the cache (a read-modify-write of one layer)."""
    kc, vc = state
    h = x
    for index in range(LAYERS):
        def write(c, r):
            return lax.dynamic_update_index_in_dim(c, r, pos, axis=1)

        h, keys, values = layer_on_slices(h, layer_weights(params, index), kc[index], vc[index], pos, write)
        kc = lax.dynamic_update_index_in_dim(kc, keys, index, axis=0)
        vc = lax.dynamic_update_index_in_dim(vc, values, index, axis=0)
    return h, (kc, vc)


def scatter(params, state, x, pos):
    """A Python loop; the row written by .at[l, arange(heads), pos].set(row), a scatter."""
    kc, vc = state
    h = x
    heads = jnp.arange(HEADS)
    for index in range(LAYERS):
        weights = layer_weights(params, index)
        q, k, v = project(h, weights)
        kc, vc = kc.at[index, heads, pos].set(k), vc.at[index, heads, pos].set(v)
        h = finish(h, weights, q, kc[index], vc[index], pos)
    return h, (kc, vc)


def ring_buffer(params, state, x, pos):
    """lax.scan xs/ys; the row written at slot pos % T, positions valid when <= pos or wrapped."""
    slot = pos % POSITIONS

    def layer(h, per_layer):
        weights, keys, values = per_layer
        q, k, v = project(h, weights)
        keys, values = keys.at[:, slot].set(k), values.at[:, slot].set(v)
        # every slot is valid once the buffer has wrapped: the same as finish's mask while pos < T
        h = finish(h, weights, q, keys, values, jnp.where(pos >= POSITIONS, POSITIONS - 1, pos))
        return h, (keys, values)

    h, (kc, vc) = lax.scan(layer, x, (params, *state))
    return h, (kc, vc)


def cond_guarded(params, state, x, pos):
    """A Python loop; the whole cache written under lax.cond(pos < T, write, keep)."""
    kc, vc = state
    h = x
    for index in range(LAYERS):
        weights = layer_weights(params, index)
        q, k, v = project(h, weights)
        kc = lax.cond(pos < POSITIONS, lambda c: c.at[index, :, pos].set(k), lambda c: c, kc)
        vc = lax.cond(pos < POSITIONS, lambda c: c.at[index, :, pos].set(v), lambda c: c, vc)
        h = finish(h, weights, q, kc[index], vc[index], pos)
    return h, (kc, vc)


def vmap_heads(params, state, x, pos):
    """lax.scan xs/ys; the row written per head under jax.vmap of dynamic_update_index_in_dim."""
    def write(c, r):  # c [heads, T, head dim], r [heads, head dim]
        return jax.vmap(lambda ch, rh: lax.dynamic_update_index_in_dim(ch, rh, pos, axis=0))(c, r)

    def layer(h, per_layer):
        weights, keys, values = per_layer
        h, keys, values = layer_on_slices(h, weights, keys, values, pos, write)
        return h, (keys, values)

    h, (kc, vc) = lax.scan(layer, x, (params, *state))
    return h, (kc, vc)


def dict_state(params, state, x, pos):
    """A dict {"k", "v", "step"} as the state, scanned as xs/ys; the step counter incremented."""
    def layer(h, per_layer):
        weights, caches = per_layer
        h, keys, values = layer_on_slices(h, weights, caches["k"], caches["v"], pos,
                                          lambda c, r: c.at[:, pos].set(r))
        return h, {"k": keys, "v": values}

    h, caches = lax.scan(layer, x, (params, {"k": state["k"], "v": state["v"]}))
    return h, {"k": caches["k"], "v": caches["v"], "step": state["step"] + 1}


def dict_from(k, v):
    return {"k": k, "v": v, "step": jnp.int32(0)}


def dict_to(state):
    return state["k"], state["v"]


# name: (function, canonical caches -> state, state -> canonical caches)
SPELLINGS = {
    "scan_carry": (scan_carry, stacked, unstacked),
    "scan_xs_ys": (scan_xs_ys, stacked, unstacked),
    "fori_dus": (fori_dus, stacked, unstacked),
    "unrolled_stack": (unrolled_stack, stacked, unstacked),
    "per_layer_args": (per_layer_args, per_layer_from, per_layer_to),
    "at_set": (at_set, stacked, unstacked),
    "update_index_in_dim": (update_index_in_dim, stacked, unstacked),
    "scatter": (scatter, stacked, unstacked),
    "ring_buffer": (ring_buffer, stacked, unstacked),
    "cond_guarded": (cond_guarded, stacked, unstacked),
    "vmap_heads": (vmap_heads, stacked, unstacked),
    "dict_state": (dict_state, dict_from, dict_to),
}


# --- the reference, in float64 NumPy ----------------------------------------------------------

def reference(params, k, v, x, pos):
    params = [np.asarray(w, np.float64) for w in params]
    k, v, h = np.array(k, np.float64), np.array(v, np.float64), np.asarray(x, np.float64)
    for index in range(LAYERS):
        w_qkv, w_out, w_fc, w_proj = (w[index] for w in params)
        q, kr, vr = (part.reshape(HEADS, HEAD) for part in np.split(h @ w_qkv, 3))
        k[index, :, pos], v[index, :, pos] = kr, vr
        scores = np.einsum("hd,htd->ht", q, k[index]) / np.sqrt(HEAD)
        scores = np.where(np.arange(POSITIONS) <= pos, scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        h = h + np.einsum("ht,htd->hd", weights, v[index]).reshape(WIDTH) @ w_out
        a = h @ w_fc
        gelu = 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))  # jax.nn.gelu's default
        h = h + gelu @ w_proj
    return h, k, v


# --- running and measuring ---------------------------------------------------------------------

def copy_lines(text, limit=6):
    """The first lines of explain() that name a copy (with the module's headline)."""
    lines = text.splitlines()
    named = [line for line in lines[1:] if "copy" in line.lower()]
    return lines[:1] + named[:limit]


def xla_module_copies(lowered):
    """Copies in XLA's optimized module (static count, total bytes of their shapes) and its text."""
    text = lowered.compile().as_text()
    sizes = {"f32": 4, "s32": 4, "f64": 8, "pred": 1, "bf16": 2, "f16": 2, "u32": 4, "s64": 8}
    count = total = 0
    for match in re.finditer(r"= (\w+)\[([\d,]*)\][^ ]* copy(-start)?\(", text):
        count += 1
        dims = [int(d) for d in match.group(2).split(",") if d]
        total += sizes.get(match.group(1), 4) * int(np.prod(dims, dtype=np.int64))
    return count, total, text


_SCRUB = []


def scrub_caches():
    """Reads 1 GiB, so that a round starts with clean caches whichever backend ran before it: a
    step reads 415 MB (more than the 260 MiB L3), and the lines the other backend's round left
    dirty (XLA's spellings copy whole caches) were written back during the next round's reads.
    ring_buffer, at_set and fori_dus at GPT-2 size, alternating with XLA, 2026-12-07 16:08:
    insitu 21.0, 22.9, 20.8 ms a step without it, 18.4, 18.9, 20.8 with it (XLA 3-7% faster too)."""
    if not _SCRUB:
        _SCRUB.append(np.ones(1 << 28, np.float32))
    _SCRUB[0].max()


def measure(name, params, x, options):
    fn, to_state, to_caches = SPELLINGS[name]
    rng = np.random.default_rng(1)
    k0 = rng.standard_normal((LAYERS, HEADS, POSITIONS, HEAD)).astype(np.float32)
    v0 = rng.standard_normal((LAYERS, HEADS, POSITIONS, HEAD)).astype(np.float32)
    pos0 = 3
    want_h, want_k, want_v = reference(params, k0, v0, x, pos0)
    row = {"name": name}
    runners = {"xla": jax.jit(fn, donate_argnums=1), "insitu": insitu.jax.jit(fn, donate_argnums=1)}
    states, outputs = {}, {}
    for which, run in runners.items():
        state = to_state(jnp.asarray(k0), jnp.asarray(v0))
        try:
            h, state = run(params, state, x, jnp.int32(pos0))
            h = np.asarray(h)
        except Exception as error:  # noqa: BLE001 -- report it and go on with the next spelling
            row[f"{which}_error"] = f"{type(error).__name__}: {str(error).strip()[:600]}"
            continue
        states[which] = state
        outputs[which] = (h, *[np.asarray(c) for c in to_caches(state)])
    if len(outputs) < 2:
        row["ok"] = False
        return row

    def error(a, b):
        """The largest difference relative to the output's scale, worst over h and the caches."""
        return max(float(np.max(np.abs(p - q)) / max(1.0, np.max(np.abs(q)))) for p, q in zip(a, b))

    want = (want_h, want_k, want_v)
    # f32 sums over up to 3,072 terms in another order: within 1e-5 of the output's largest value
    row["insitu_vs_xla"] = error(outputs["insitu"], outputs["xla"]) <= 1e-5
    row["xla_vs_reference"] = error(outputs["xla"], want) <= 1e-4
    row["max_diff"] = max(float(np.max(np.abs(p - q))) for p, q in zip(outputs["insitu"], outputs["xla"]))
    row["error_vs_reference"] = {which: error(outputs[which], want) for which in outputs}
    row["ok"] = row["xla_vs_reference"] and row["insitu_vs_xla"]

    times = {which: [] for which in runners}
    for _ in range(options.rounds + 1):  # the first round warms up and is dropped
        for which, run in runners.items():
            scrub_caches()
            start = time.perf_counter()
            for step in range(options.steps):
                h, states[which] = run(params, states[which], x, jnp.int32(pos0 + 1 + step))
            jax.block_until_ready((h, states[which]))
            times[which].append((time.perf_counter() - start) / options.steps * 1e3)
    row["insitu_ms"] = statistics.median(times["insitu"][1:])
    row["xla_ms"] = statistics.median(times["xla"][1:])

    executable = runners["insitu"].executable(params, states["insitu"], x, jnp.int32(pos0))
    stats = executable.stats  # the last call's figures: one step
    row["bytes_copied"] = stats["bytes_copied"]
    row["copies"] = stats["copies_executed"]
    row["copies_in_module"] = len(stats["copies_in_module"])
    for key in ("bytes_written", "bytes_staged", "argument_bytes_copied", "result_bytes_copied", "unused_donors"):
        row[key] = stats[key]
    if stats["bytes_copied"] > 0 or stats["copies_executed"] > 0:
        row["explain"] = copy_lines(executable.explain())

    if options.xla_module:
        lowered = runners["xla"].lower(params, states["xla"], x, jnp.int32(pos0))
        count, total, text = xla_module_copies(lowered)
        row["xla_module_copies"], row["xla_module_copy_bytes"] = count, total
        try:
            explained = insitu.compile(text).explain()
            row["insitu_on_xla_module"] = explained.splitlines()[0].split(": ", 1)[-1]
            row["xla_module_explain"] = copy_lines(explained)[1:]
        except Exception as error:  # noqa: BLE001
            row["insitu_on_xla_module"] = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:200]}"
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--only", default="", help="comma-separated spelling names")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4, help="steps per timed round")
    parser.add_argument("--xla-module", action="store_true", help="also count copies in XLA's optimized module")
    options = parser.parse_args()
    set_size(options.size)
    insitu.default_threads = options.threads
    rng = np.random.default_rng(0)

    def weight(*shape):
        return jnp.asarray(rng.standard_normal(shape) * 0.02, jnp.float32)

    params = (weight(LAYERS, WIDTH, 3 * WIDTH), weight(LAYERS, WIDTH, WIDTH), weight(LAYERS, WIDTH, 4 * WIDTH),
              weight(LAYERS, 4 * WIDTH, WIDTH))
    x = jnp.asarray(rng.standard_normal(WIDTH), jnp.float32)
    names = options.only.split(",") if options.only else list(SPELLINGS)
    cache_bytes = 2 * LAYERS * HEADS * POSITIONS * HEAD * 4
    print(f"size {options.size}: {LAYERS} layers, {HEADS} heads x {HEAD}, {POSITIONS} positions, "
          f"caches {cache_bytes} bytes (k and v), donated; insitu threads {options.threads}")
    print(f"{'spelling':<22}{'ok':<6}{'bytes_copied':>14}{'copies':>8}{'staged':>11}{'written':>11}{'insitu ms':>11}"
          f"{'xla ms':>9}")
    rows = []
    for name in names:
        row = measure(name, params, x, options)
        rows.append(row)
        if "insitu_error" in row or "xla_error" in row:
            print(f"{name:<22}FAILED  " + "; ".join(f"{k}: {row[k]}" for k in ("xla_error", "insitu_error") if k in row))
            continue
        print(f"{name:<22}{'yes' if row['ok'] else 'NO':<6}{row['bytes_copied']:>14}{row['copies']:>8}"
              f"{row['bytes_staged']:>11}{row['bytes_written']:>11}{row['insitu_ms']:>11.3f}{row['xla_ms']:>9.3f}"
              + ("" if row["ok"] else f"  (insitu~xla {row['insitu_vs_xla']}, xla~ref {row['xla_vs_reference']},"
                                       " see max diff below)"))
        print(f"{'':<22}max |insitu - xla| {row['max_diff']:.1e}; error vs float64 reference: insitu "
              f"{row['error_vs_reference']['insitu']:.1e}, xla {row['error_vs_reference']['xla']:.1e}; argument/result bytes copied {row['argument_bytes_copied']}/{row['result_bytes_copied']}, unused donors "
              f"{row['unused_donors']}, copies in module {row['copies_in_module']}")
        if options.xla_module:
            print(f"{'':<22}XLA optimized module: {row['xla_module_copies']} copies, {row['xla_module_copy_bytes']} "
                  f"bytes; insitu.compile of it: {row['insitu_on_xla_module']}")
            for line in row["xla_module_explain"][:4]:
                print(f"{'':<22}  xla-module | {line}")
        for line in row.get("explain", []):
            print(f"{'':<22}| {line}")
    ran = [row for row in rows if "insitu_ms" in row]
    copying = [row["name"] for row in ran if row["bytes_copied"] > 0]
    staging = [row["name"] for row in ran if row["bytes_staged"] > 0]
    failed = [row["name"] for row in rows if "insitu_ms" not in row]
    print(f"summary: {len(ran)}/{len(rows)} ran, {sum(row['ok'] for row in ran)} values ok, "
          f"{len(ran) - len(copying)} copy 0 bytes; copying: {', '.join(copying) or 'none'}; "
          f"failed: {', '.join(failed) or 'none'}; staging slices (bytes_staged > 0, not in bytes_copied nor "
          f"explain): {', '.join(staging) or 'none'}")
    if ran:
        ratio = statistics.median(row["insitu_ms"] / row["xla_ms"] for row in ran)
        print(f"median insitu/XLA time per step: {ratio:.2f}x")


if __name__ == "__main__":
    main()
