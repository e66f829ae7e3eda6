"""Per-call overhead and the KV-cache update from Python, each against its baseline in the
same run (bench/README.md has the figures and the command):

  1. a tiny op (x + 1 on f32[4]): jax.jit vs insitu.jax.jit vs jax.jit on the insitu device (the
     PJRT plugin, insitu.jax_plugin); torch eager vs torch.compile with inductor vs with insitu;
  2. a decode step (kv_cache_decode_step of the peer corpus: cache [2,L,H,T,D] donated, one
     position written, attention over it): jax.jit vs insitu.jax.jit vs jax.jit on the insitu
     device, all donating the cache, and insitu's own C++ call of the same HLO (Executable from
     Python, no JAX: the floor the plugin's dispatch is measured against);
     and one in torch (index_copy_ into the K and V caches, attention, projection): eager vs
     torch.compile with inductor vs with insitu, the caches mutated in place in all three;
  3. a KV-cache update from torch: cache.index_copy_(1, pos, kv) eagerly vs the same function
     compiled with insitu (the cache is mutated, so written in place).

Median of REPEATS rounds of CALLS calls each, in microseconds per call; the JAX rows' rounds
alternate between the systems they compare.

    $(scripts/python-env)/bin/python bench/python/overhead.py [--threads N]
(PYTHONPATH=build/python, or the package installed.)
"""
import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))


def per_call(f, calls, repeats, sync=lambda r: None):
    for _ in range(max(calls // 10, 3)):
        sync(f())
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            r = f()
        sync(r)
        rounds.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(rounds)


def alternating(functions, calls, repeats):
    """Median microseconds per call of each function, its rounds alternating with the others' so
    that a slow moment of the machine hits them alike."""
    times = {name: [] for name in functions}
    for _ in range(repeats):
        for name, f in functions.items():
            times[name].append(per_call(f, calls, 1))
    return {name: statistics.median(values) for name, values in times.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1, help="insitu worker threads (default 1: call overhead)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import torch

    import insitu
    import insitu.jax
    import insitu.jax_plugin
    import insitu.torch
    import jax_programs

    insitu.default_threads = options.threads
    insitu.jax_plugin.initialize()  # before JAX makes its backends; reads default_threads
    device = jax.devices("insitu")[0]
    torch.set_num_threads(max(options.threads, 1))
    rows = []

    def row(what, baseline_name, baseline, name, value):
        rows.append((what, baseline_name, baseline, name, value))

    # 1. tiny op
    x = jnp.ones(4, jnp.float32)
    f = lambda x: x + 1.0  # noqa: E731
    jitted, ours = jax.jit(f), insitu.jax.jit(f)
    block = jax.block_until_ready
    x_device = jax.device_put(x, device)
    tiny = alternating({"jax.jit": lambda: block(jitted(x)), "insitu.jax.jit": lambda: block(ours(x)),
                        "jax.jit on insitu device": lambda: block(jitted(x_device))}, options.calls, options.repeats)
    for name in ("insitu.jax.jit", "jax.jit on insitu device"):
        row("x + 1, f32[4]", "jax.jit", tiny["jax.jit"], name, tiny[name])
    t = torch.ones(4)
    g = lambda t: t + 1.0  # noqa: E731
    eager = per_call(lambda: g(t), options.calls, options.repeats)
    inductor = torch.compile(g, dynamic=False)
    compiled = torch.compile(g, backend="insitu", dynamic=False)
    row("t + 1, f32[4]", "torch eager", eager, "torch.compile inductor",
        per_call(lambda: inductor(t), options.calls, options.repeats))
    row("t + 1, f32[4]", "torch eager", eager, "torch.compile insitu",
        per_call(lambda: compiled(t), options.calls, options.repeats))

    # 2. decode step with a donated cache
    layers, heads, length, dim = 4, 8, 1024, 64
    step = jax_programs.kv_cache_decode_step_fn(length, dim)
    rng = np.random.RandomState(0)
    args = [rng.standard_normal((2, layers, heads, length, dim)).astype(np.float32),
            rng.standard_normal((2, layers, heads, 1, dim)).astype(np.float32),
            rng.standard_normal((layers, heads, dim)).astype(np.float32), np.int32(7)]
    decode_what = f"decode step, cache {2 * layers * heads * length * dim * 4 >> 20} MiB donated"
    calls = {}
    for name, make, where in [("jax.jit", lambda: jax.jit(step, donate_argnums=(0,)), None),
                              ("insitu.jax.jit", lambda: insitu.jax.jit(step, donate_argnums=(0,)), None),
                              ("jax.jit on insitu device", lambda: jax.jit(step, donate_argnums=(0,)), device)]:
        fn = make()
        put = (lambda a: jax.device_put(a, where)) if where is not None else jnp.asarray
        state = {"cache": put(args[0]) * 1}  # an array the device computed (device_put may lend numpy's memory)
        new_kv, query, pos = (put(a) for a in args[1:])

        def call(fn=fn, state=state, new_kv=new_kv, query=query, pos=pos):
            state["cache"], out = fn(state["cache"], new_kv, query, pos)
            return block(out)

        calls[name] = call
    # insitu's own call of the same program (the HLO jax.jit lowers), from Python without JAX
    lowered = jax.jit(step, donate_argnums=(0,)).lower(*[jnp.asarray(a) for a in args])
    executable = insitu.compile(lowered.as_text(dialect="hlo"))
    arrays = {"cache": args[0].copy()}  # donated: written in place, then insitu.Arrays
    rest = [np.asarray(a) for a in args[1:]]

    def native():
        arrays["cache"], out = executable(arrays["cache"], *rest, donate=[0])
        return out

    calls["insitu Executable (C++ call)"] = native
    decode = alternating(calls, max(options.calls // 20, 20), options.repeats)
    for name in ("insitu.jax.jit", "jax.jit on insitu device"):
        row(decode_what, "jax.jit", decode["jax.jit"], name, decode[name])
    row(decode_what, "insitu Executable (C++ call)", decode["insitu Executable (C++ call)"], "jax.jit on insitu device",
        decode["jax.jit on insitu device"])

    # 2b. the decode step from torch: write position `pos` of the caches in place (index_copy_),
    # attend over them, project; eager vs inductor vs insitu, caches mutated in every one
    torch.manual_seed(0)
    d_model, heads_t, length_t = 256, 8, 512
    head = d_model // heads_t
    w_qkv, w_out = torch.randn(d_model, 3 * d_model) * 0.05, torch.randn(d_model, d_model) * 0.05

    def decode(k_cache, v_cache, x, pos):
        q, k, v = (x @ w_qkv).split(d_model, dim=-1)
        k_cache.index_copy_(1, pos, k.view(heads_t, 1, head))
        v_cache.index_copy_(1, pos, v.view(heads_t, 1, head))
        att = torch.softmax((k_cache @ q.view(heads_t, head, 1)).squeeze(-1) / head ** 0.5, dim=-1)
        return (att.unsqueeze(1) @ v_cache).reshape(1, d_model) @ w_out

    caches = [torch.zeros(heads_t, length_t, head) for _ in range(2)]
    x_t, pos_t = torch.randn(1, d_model), torch.tensor([3])
    runs = {"torch eager": decode, "torch.compile inductor": torch.compile(decode, dynamic=False),
            "torch.compile insitu": torch.compile(decode, backend="insitu", dynamic=False)}
    timings = {name: per_call(lambda f=f: f(caches[0], caches[1], x_t, pos_t), max(options.calls // 10, 50),
                              options.repeats) for name, f in runs.items()}
    eager_graphs = [g for g in insitu.torch.compiled_graphs if g.executable is None]
    if eager_graphs:
        print(f"# torch decode step: graphs run eagerly by the insitu backend: {eager_graphs}")
    for name in ("torch.compile inductor", "torch.compile insitu"):
        row(f"decode step, {heads_t}x{length_t}x{head} caches mutated", "torch eager", timings["torch eager"], name,
            timings[name])

    # 3. KV-cache update from torch
    cache = torch.zeros(2, 1024, 12, 64)
    kv = torch.randn(2, 1, 12, 64)
    pos = torch.tensor([5])

    def update(cache, kv, pos):
        cache.index_copy_(1, pos, kv)

    eager = per_call(lambda: update(cache, kv, pos), options.calls, options.repeats)
    compiled_update = torch.compile(update, backend="insitu", dynamic=False)
    pointer = cache.data_ptr()
    value = per_call(lambda: compiled_update(cache, kv, pos), options.calls, options.repeats)
    assert cache.data_ptr() == pointer
    graph = insitu.torch.compiled_graphs[-1]
    note = "insitu" if graph.executable is not None else f"eager fallback: {graph.fallback}"
    row("cache.index_copy_, cache 6 MiB", "torch eager", eager, f"torch.compile {note}", value)
    if graph.executable is not None:
        print(f"# index_copy_ graph: bytes_copied {graph.stats['bytes_copied']}, "
              f"copied_back_bytes {graph.copied_back_bytes}")

    print(f"# insitu threads {options.threads}; median of {options.repeats} rounds; microseconds per call")
    print("| program | baseline | us/call | system | us/call | ratio |")
    print("|---|---|---:|---|---:|---:|")
    for what, base_name, base, name, value in rows:
        print(f"| {what} | {base_name} | {base:.1f} | {name} | {value:.1f} | {value / base:.2f}x |")


if __name__ == "__main__":
    main()
