"""The spelling generators at real size, in one run, written into RESULTS.md (issue 36: "measured
in one run and recorded in bench/peers/RESULTS.md"). Runs bench/python/decode_spellings.py's
twelve GPT-2-small decode steps (with XLA's optimized module of each handed to insitu too) and
bench/python/optimizer_spellings.py's nine Adam steps over 12 x [768, 768], each beside jax.jit
in one process, and replaces the section between the markers below in RESULTS.md (appends it
the first time); the rest of the file, the peer table's, is left as it is.

Each row's floor is the bytes the step must move at the bandwidth numpy reaches on the same
threads, measured beside that row (the machine's speed moves by 2x within a run): for a decode step, every weight and both whole caches read
once (the attention reads all positions under a mask) at the read bandwidth (the max of a 1 GiB
array: on this machine's 260 MiB L3 a smaller one is partly cached); for an Adam step, params,
m, v and the gradients read and params, m, v written (7 x a state array; 8 x where a reduction over
all the gradients comes before the update: optimizer_spellings.GRADIENT_PASSES) at the copy bandwidth
(bytes read plus written).

    PYTHONPATH=build/python $(scripts/python-env)/bin/python bench/peers/spellings_report.py
        [--rounds 5] [--decode-steps 4] [--adam-steps 10] [--results bench/peers/RESULTS.md]
"""
import argparse
import datetime
import os
import platform
import statistics
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import insitu

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
import decode_spellings  # noqa: E402
import optimizer_spellings  # noqa: E402

BEGIN = "<!-- spellings_report.py: begin -->"
END = "<!-- spellings_report.py: end -->"


def bandwidth(threads):
    """Bytes read plus written per second by numpy copies of 256 MiB (median of 3 bests of 5)."""
    return statistics.median(optimizer_spellings.copy_bandwidth(256 << 20, threads) for _ in range(3))


def read_bandwidth(threads):
    """Bytes read per second by `threads` threads taking the max of their parts of a 1 GiB array (best
    of 5): numpy's sum is compute-bound (18 GB/s on 2 threads here where max reads 27)."""
    data = np.ones(1 << 28, np.float32)
    bounds = np.linspace(0, data.size, threads + 1).astype(int)
    return data.nbytes / optimizer_spellings.best_threaded(lambda i: np.max(data[bounds[i]:bounds[i + 1]]), threads)


def decode_rows(options):
    decode_spellings.set_size("gpt2")
    rng = np.random.default_rng(0)
    d = decode_spellings

    def weight(*shape):
        return jnp.asarray(rng.standard_normal(shape) * 0.02, jnp.float32)

    params = (weight(d.LAYERS, d.WIDTH, 3 * d.WIDTH), weight(d.LAYERS, d.WIDTH, d.WIDTH),
              weight(d.LAYERS, d.WIDTH, 4 * d.WIDTH), weight(d.LAYERS, 4 * d.WIDTH, d.WIDTH))
    x = jnp.asarray(rng.standard_normal(d.WIDTH), jnp.float32)
    cache_bytes = 2 * d.LAYERS * d.HEADS * d.POSITIONS * d.HEAD * 4
    read_bytes = sum(w.nbytes for w in params) + cache_bytes
    run = argparse.Namespace(rounds=options.rounds, steps=options.decode_steps, xla_module=True,
                             threads=options.threads)
    lines = ["| spelling | values | bytes copied | insitu ms | XLA ms | insitu/XLA | /floor | XLA's module: copies "
             "| insitu on it: copies |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    floors = []
    for name in d.SPELLINGS:
        floor_ms = read_bytes / read_bandwidth(options.threads) * 1e3
        floors.append(floor_ms)
        row = d.measure(name, params, x, run)
        if "insitu_ms" not in row:
            lines.append(f"| {name} | failed: {row.get('insitu_error') or row.get('xla_error')} | | | | | | | |")
            continue
        lines.append(f"| {name} | {'ok' if row['ok'] else 'DIFFER'} | {row['bytes_copied']} | {row['insitu_ms']:.2f} "
                     f"| {row['xla_ms']:.2f} | {row['insitu_ms'] / row['xla_ms']:.2f} | {row['insitu_ms'] / floor_ms:.2f} "
                     f"| {row['xla_module_copies']} ({row['xla_module_copy_bytes']} B) | {row['insitu_on_xla_module']} |")
        print(lines[-1], flush=True)
    head = (f"**Decode step, GPT-2 small** ({d.LAYERS} layers, {d.HEADS} heads x {d.HEAD}, {d.POSITIONS} positions; "
            f"caches {cache_bytes} bytes donated; floor {min(floors):.2f}-{max(floors):.2f} ms: weights and caches "
            f"({read_bytes} bytes) read once at the read bandwidth measured before the row; "
            f"{options.rounds} rounds of {options.decode_steps} steps, median)")
    return [head, ""] + lines


def adam_rows(options):
    layers, width = optimizer_spellings.SIZES["real"]
    state_bytes = layers * width * width * 4
    run = argparse.Namespace(rounds=options.rounds, steps=options.adam_steps, threads=options.threads)
    floors = []
    lines = ["| spelling | values | bytes copied | bytes written | insitu ms | XLA ms | insitu/XLA | /floor |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name in optimizer_spellings.SPELLINGS:
        row = optimizer_spellings.measure(name, layers, width, run)
        floor_ms = row["floor_ms"]  # 7 (or 8) x the state at the copy bandwidth of the row's own rounds
        floors.append(floor_ms)
        lines.append(f"| {name} | {'ok' if row['ok'] else 'DIFFER'} | {row['copied']} | {row['written']} "
                     f"| {row['insitu_ms']:.2f} | {row['xla_ms']:.2f} | {row['insitu_ms'] / row['xla_ms']:.2f} "
                     f"| {row['insitu_ms'] / floor_ms:.2f} |")
        print(lines[-1], flush=True)
    head = (f"**Adam step** ({layers} x [{width}, {width}] f32: params, m, v donated; floor {min(floors):.2f}-"
            f"{max(floors):.2f} ms: 7 x {state_bytes} bytes (8 x for "
            f"{', '.join(optimizer_spellings.GRADIENT_PASSES)}: the gradients read whole before the update) at the "
            "copy bandwidth measured in the row's own rounds; "
            f"{options.rounds} rounds of {options.adam_steps} steps, median)")
    return [head, ""] + lines


def write_section(path, body):
    text = path.read_text() if path.exists() else ""
    section = f"{BEGIN}\n{body}\n{END}\n"
    if BEGIN in text and END in text:
        before, rest = text.split(BEGIN, 1)
        text = before + section + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--decode-steps", type=int, default=4)
    parser.add_argument("--adam-steps", type=int, default=10, help="steps a round: fewer let each runtime's "
                        "threads still spinning from the other's round slow the first calls")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--results", default=str(HERE / "RESULTS.md"))
    options = parser.parse_args()
    insitu.default_threads = options.threads
    moved, read = bandwidth(options.threads), read_bandwidth(options.threads)
    print(f"copy bandwidth {moved / 1e9:.1f} GB/s (read + written), read bandwidth {read / 1e9:.1f} GB/s", flush=True)
    decode = decode_rows(options)
    adam = adam_rows(options)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = "\n".join([
        "## Every spelling (issue 36): the decode and Adam spelling generators at real size",
        "",
        f"Generated by `bench/peers/spellings_report.py` on {now}, one run; {os.cpu_count()} cores, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end, Python {platform.python_version()}, "
        f"jax {jax.__version__}; insitu on {options.threads} threads, XLA:CPU as jax.jit runs it; numpy on the same "
        f"threads at the start: copy bandwidth {moved / 1e9:.1f} GB/s (bytes read plus written; the Adam floors), "
        f"read bandwidth {read / 1e9:.1f} GB/s (the decode floors). `values`: insitu's against "
        "XLA's (and XLA's against a float64 reference for the decode step); `bytes copied`: insitu's runtime "
        "count for one step; `/floor`: insitu's time over the floor.",
        "", *decode, "", *adam])
    write_section(Path(options.results), body)
    print(f"wrote {options.results}")


if __name__ == "__main__":
    main()
