"""The GEMM shapes of torch_models.py's transformer step (each with its operand layout: which
dimension each operand contracts), timed through insitu.compile of a one-dot HLO module and
through torch.mm on the equivalent (transposed) views, alternately in one process on 2 threads.
Prints per shape the median ms and GFLOP/s of each and their ratio, and the step's total
(each shape weighted by how often the step runs it).

    PYTHONPATH=build/python $(scripts/python-env)/bin/python bench/python/torch_gemm_shapes.py
"""
import statistics
import time

import numpy as np
import torch

import insitu

# (lhs dims, rhs dims, lhs contracting dimension, rhs contracting dimension, dots per step)
SHAPES = [
    ((512, 512), (512, 512), 1, 1, 4), ((512, 512), (512, 512), 1, 0, 4), ((512, 512), (512, 512), 0, 0, 4),
    ((512, 2048), (512, 2048), 1, 1, 4), ((512, 2048), (2048, 512), 1, 0, 4), ((512, 1536), (1536, 512), 1, 0, 4),
    ((512, 512), (512, 2048), 1, 0, 4), ((512, 512), (512, 2048), 0, 0, 4), ((512, 512), (2048, 512), 1, 1, 4),
    ((512, 512), (1536, 512), 1, 1, 4), ((512, 2048), (512, 512), 0, 0, 4), ((512, 1536), (512, 512), 0, 0, 4),
    ((512, 8192), (512, 512), 0, 0, 1), ((512, 512), (8192, 512), 1, 1, 1), ((512, 8192), (8192, 512), 1, 0, 1),
]


def median_ms(fn, calls=10):
    fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def one_dot(lhs, rhs, lhs_contracting, rhs_contracting):
    m, n = lhs[1 - lhs_contracting], rhs[1 - rhs_contracting]
    return insitu.compile(f"""HloModule dot
ENTRY main {{
  a = f32[{lhs[0]},{lhs[1]}] parameter(0)
  b = f32[{rhs[0]},{rhs[1]}] parameter(1)
  ROOT d = f32[{m},{n}] dot(a, b), lhs_contracting_dims={{{lhs_contracting}}}, rhs_contracting_dims={{{rhs_contracting}}}
}}""")


def main():
    torch.set_num_threads(2)
    insitu.default_threads = 2
    rng = np.random.default_rng(0)
    total_insitu = total_torch = 0.0
    for lhs, rhs, lhs_contracting, rhs_contracting, count in SHAPES:
        executable = one_dot(lhs, rhs, lhs_contracting, rhs_contracting)
        a, b = rng.random(lhs, np.float32), rng.random(rhs, np.float32)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        left = ta if lhs_contracting == 1 else ta.t()
        right = tb if rhs_contracting == 0 else tb.t()
        ours = min(median_ms(lambda: executable(a, b)) for _ in range(2))
        theirs = min(median_ms(lambda: torch.mm(left, right)) for _ in range(2))
        total_insitu += ours * count
        total_torch += theirs * count
        gflop = 2 * left.shape[0] * right.shape[1] * left.shape[1] / 1e9
        print(f"{str(lhs):>12} x {str(rhs):>12} contracting ({lhs_contracting},{rhs_contracting})  "
              f"insitu {ours:6.2f} ms ({gflop / ours * 1e3:4.0f} GFLOP/s)  "
              f"torch {theirs:6.2f} ms ({gflop / theirs * 1e3:4.0f})  ratio {ours / theirs:4.2f}", flush=True)
    print(f"per step, each shape times its count: insitu {total_insitu:.1f} ms, torch {total_torch:.1f} ms")


if __name__ == "__main__":
    main()
