"""One Adam step written many ways in JAX (issue 36, "a generator of spellings", the optimizer
half; decode_spellings.py is the decode half): does insitu update the donated parameters and
moments in place however the step is spelled?

Every spelling is fn(params, m, v, grads, step) -> (params, m, v, step + 1) on per-layer weights
[layers, d, d], with params, m and v donated; each is run by jax.jit (XLA:CPU) and
insitu.jax.jit, insitu's values checked against XLA's, and one line printed per spelling: values
ok, insitu's bytes copied / staged / written for one step, and the median ms per step of each.
The floor a step cannot go under: read params, m, v and grads, write params, m and v
(7 x the state's bytes; 8 x where a reduction over all the gradients decides every element, so
they are read whole before the first update: GRADIENT_PASSES), at the bandwidth a copy on
`--threads` threads reaches in the same round
(numpy's copyto of the state's bytes, one slice per thread: each byte read once and written once).

    $(scripts/python-env)/bin/python bench/python/optimizer_spellings.py [--size small|real]
        [--only NAME,...] [--threads 2] [--rounds 5] [--steps 10]
"""
import argparse
import statistics
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import insitu
import insitu.jax

SIZES = {"small": (2, 16), "real": (12, 768)}  # layers, d
B1, B2, LR, EPS = 0.9, 0.999, 1e-3, 1e-8


def adam(p, g, m, v, step):
    """One Adam update of one array (step: the new step count, from 1)."""
    m = B1 * m + (1 - B1) * g
    v = B2 * v + (1 - B2) * g * g
    m_hat = m / (1 - B1 ** step.astype(jnp.float32))
    v_hat = v / (1 - B2 ** step.astype(jnp.float32))
    return p - LR * m_hat / (jnp.sqrt(v_hat) + EPS), m, v


# --- the spellings: (params, m, v, grads) as stacked [layers, d, d] arrays, or as noted ----------

def stacked(params, m, v, grads, step):
    """The whole stack at once."""
    step = step + 1
    p, m, v = adam(params, grads, m, v, step)
    return p, m, v, step


def per_layer_list(params, m, v, grads, step):
    """Lists of per-layer arrays, a Python loop."""
    step = step + 1
    out = [adam(p, g, a, b, step) for p, g, a, b in zip(params, grads, m, v)]
    return [o[0] for o in out], [o[1] for o in out], [o[2] for o in out], step


def tree_map_dict(params, m, v, grads, step):
    """A dict pytree per layer, jax.tree_util.tree_map over it."""
    step = step + 1
    out = jax.tree_util.tree_map(lambda p, g, a, b: adam(p, g, a, b, step), params, grads, m, v)
    pick = lambda i: jax.tree_util.tree_map(lambda t: t[i], out, is_leaf=lambda t: isinstance(t, tuple))  # noqa: E731
    return pick(0), pick(1), pick(2), step


def scan_layers(params, m, v, grads, step):
    """lax.scan over the layers, the stacks as xs and the new ones as ys."""
    step = step + 1

    def layer(carry, xs):
        p, g, a, b = xs
        return carry, adam(p, g, a, b, step)

    _, (p, m, v) = lax.scan(layer, None, (params, grads, m, v))
    return p, m, v, step


def fori_dynamic_update(params, m, v, grads, step):
    """lax.fori_loop over the layers, each layer written back by dynamic_update_index_in_dim."""
    step = step + 1

    def layer(i, state):
        p, a, b = state
        new = adam(p[i], grads[i], a[i], b[i], step)
        return tuple(lax.dynamic_update_index_in_dim(t, n, i, 0) for t, n in zip((p, a, b), new))

    p, m, v = lax.fori_loop(0, params.shape[0], layer, (params, m, v))
    return p, m, v, step


def at_set_unrolled(params, m, v, grads, step):
    """A Python loop over the layers, each written by .at[i].set."""
    step = step + 1
    for i in range(params.shape[0]):
        p, a, b = adam(params[i], grads[i], m[i], v[i], step)
        params, m, v = params.at[i].set(p), m.at[i].set(a), v.at[i].set(b)
    return params, m, v, step


def vmap_layers(params, m, v, grads, step):
    """jax.vmap of the per-array update over the layers."""
    step = step + 1
    p, m, v = jax.vmap(lambda p, g, a, b: adam(p, g, a, b, step))(params, grads, m, v)
    return p, m, v, step


def clipped_global_norm(params, m, v, grads, step):
    """Gradients clipped by their global norm first (a reduction over everything, then the update)."""
    step = step + 1
    norm = jnp.sqrt(jnp.sum(grads * grads))
    grads = grads * jnp.minimum(1.0, 1.0 / (norm + 1e-6))
    p, m, v = adam(params, grads, m, v, step)
    return p, m, v, step


def skip_nonfinite(params, m, v, grads, step):
    """The update kept only where the gradients are finite (jnp.where over the whole state)."""
    step = step + 1
    ok = jnp.all(jnp.isfinite(grads))
    p, a, b = adam(params, grads, m, v, step)
    return jnp.where(ok, p, params), jnp.where(ok, a, m), jnp.where(ok, b, v), step


def to_layers(stack):
    return [stack[i] for i in range(stack.shape[0])]


def to_dicts(stack):
    return [{"w": stack[i]} for i in range(stack.shape[0])]


def from_list(value):
    return np.stack([np.asarray(t) for t in value])


def from_dicts(value):
    return np.stack([np.asarray(t["w"]) for t in value])


def same(value):
    return value


def back(value):
    return np.asarray(value)


SPELLINGS = {  # name: (function, stack -> its state form, its state form -> stack)
    "stacked": (stacked, same, back),
    "per_layer_list": (per_layer_list, to_layers, from_list),
    "tree_map_dict": (tree_map_dict, to_dicts, from_dicts),
    "scan_layers": (scan_layers, same, back),
    "fori_dynamic_update": (fori_dynamic_update, same, back),
    "at_set_unrolled": (at_set_unrolled, same, back),
    "vmap_layers": (vmap_layers, same, back),
    "clipped_global_norm": (clipped_global_norm, same, back),
    "skip_nonfinite": (skip_nonfinite, same, back),
}


# Spellings whose every update waits on a reduction over all the gradients (a global norm, an
# all-finite test): the gradients are read once for it and again by the update.
GRADIENT_PASSES = {"clipped_global_norm": 2, "skip_nonfinite": 2}


def floor_passes(name):
    """Passes over a state array's bytes the step must make: params, m, v read and written, the
    gradients read (GRADIENT_PASSES times)."""
    return 6 + GRADIENT_PASSES.get(name, 1)


def best_threaded(part, threads, tries=5):
    """The best wall time of `threads` threads running part(0) ... part(threads - 1) at once."""
    best = float("inf")
    for _ in range(tries):
        workers = [threading.Thread(target=part, args=(i,)) for i in range(threads)]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        best = min(best, time.perf_counter() - start)
    return best


_FLUSH = None


def flush_caches():
    """Writes 512 MiB (twice this machine's 260 MiB L3) so that each runtime's round starts from
    memory: the state (4 x 28 MB at real size) would otherwise stay cached across rounds for one
    runtime and be evicted by the other's (XLA's fori_loop spelling touches several times the
    state), which made the same insitu step 1.4x slower after some XLA rows than after others."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = np.empty(128 << 20, np.float32)
    _FLUSH.fill(1.0)


def copy_bandwidth(nbytes, threads):
    """Bytes read plus written per second by copies of nbytes on `threads` threads (best of 5)."""
    source, target = np.ones(nbytes // 4, np.float32), np.zeros(nbytes // 4, np.float32)
    bounds = np.linspace(0, source.size, threads + 1).astype(int)

    def part(i):
        np.copyto(target[bounds[i]:bounds[i + 1]], source[bounds[i]:bounds[i + 1]])

    return 2 * nbytes / best_threaded(part, threads)


def measure(name, layers, d, options):
    fn, to_form, from_form = SPELLINGS[name]
    rng = np.random.default_rng(0)
    stacks = [rng.standard_normal((layers, d, d)).astype(np.float32) * s for s in (0.05, 0.01, 0.001, 0.02)]
    params0, m0, v0, grads = stacks
    v0 = np.abs(v0)
    runners = {"xla": jax.jit(fn, donate_argnums=(0, 1, 2)), "insitu": insitu.jax.jit(fn, donate_argnums=(0, 1, 2))}
    state, results, times = {}, {}, {which: [] for which in runners}
    bandwidths = []
    grads_form = to_form(jnp.asarray(grads))
    for which, run in runners.items():
        state[which] = tuple(to_form(jnp.asarray(a)) for a in (params0, m0, v0)) + (jnp.int32(0),)
        out = run(*state[which][:3], grads_form, state[which][3])
        results[which] = [from_form(t) for t in out[:3]]
        state[which] = out
    error = max(float(np.max(np.abs(a - b))) for a, b in zip(results["insitu"], results["xla"]))
    for _ in range(options.rounds + 1):
        bandwidths.append(copy_bandwidth(params0.nbytes, options.threads))
        for which, run in runners.items():
            flush_caches()
            start = time.perf_counter()
            for _ in range(options.steps):
                state[which] = run(*state[which][:3], grads_form, state[which][3])
            jax.block_until_ready(state[which])
            times[which].append((time.perf_counter() - start) / options.steps * 1e3)
    executable = runners["insitu"].executable(*state["insitu"][:3], grads_form, state["insitu"][3])
    stats = executable.stats
    return dict(name=name, ok=error <= 1e-6, error=error, copied=stats["bytes_copied"], staged=stats["bytes_staged"],
                written=stats["bytes_written"], insitu_ms=statistics.median(times["insitu"][1:]),
                xla_ms=statistics.median(times["xla"][1:]),
                floor_ms=floor_passes(name) * params0.nbytes / statistics.median(bandwidths[1:]) * 1e3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--only", default="")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    # steps a round: after the other runtime's round (or any pause) the first calls of either run up
    # to 2x slower on this machine, so short rounds measure that more than the step
    parser.add_argument("--steps", type=int, default=10)
    options = parser.parse_args()
    insitu.default_threads = options.threads
    layers, d = SIZES[options.size]
    state_bytes = layers * d * d * 4
    print(f"size {options.size}: {layers} layers of [{d}, {d}] f32, {state_bytes} bytes per state array; "
          f"floor 7 x that read or written a step (8 x for {', '.join(GRADIENT_PASSES)}); params, m, v donated; insitu threads {options.threads}")
    print(f"{'spelling':<22}{'ok':<5}{'copied':>12}{'staged':>12}{'written':>12}{'insitu ms':>11}{'xla ms':>9}{'ratio':>7}"
          f"{'floor ms':>10}{'/floor':>8}")
    ratios = []
    for name in (options.only.split(",") if options.only else SPELLINGS):
        row = measure(name, layers, d, options)
        ratios.append(row["insitu_ms"] / row["xla_ms"])
        print(f"{name:<22}{'yes' if row['ok'] else 'NO':<5}{row['copied']:>12}{row['staged']:>12}{row['written']:>12}"
              f"{row['insitu_ms']:>11.3f}{row['xla_ms']:>9.3f}{ratios[-1]:>7.2f}{row['floor_ms']:>10.3f}"
              f"{row['insitu_ms'] / row['floor_ms']:>8.2f}"
              + ("" if row["ok"] else f"  (max |insitu - xla| {row['error']:.1e})"), flush=True)
    print(f"median insitu/XLA time per step: {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
