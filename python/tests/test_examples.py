"""The seed's script in both frameworks and the Pallas decode step (examples/python), run as a user
runs them."""
import os
import subprocess
import sys

from conftest import REPO


def run_example(name, examples_plugin):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, str(REPO / "examples" / "python" / name), str(examples_plugin)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_seed_torch_script_mutates_x_with_no_copy(examples_plugin):
    out = run_example("seed_torch.py", examples_plugin)
    assert out.count("x = tensor([2, 2, 2, 2], dtype=torch.int32)") == 2
    assert out.count("copies in the compiled module: 0, bytes copied: 0") == 2


def test_seed_jax_script_writes_the_donated_buffer(examples_plugin):
    out = run_example("seed_jax.py", examples_plugin)
    assert "y = [2 2 2 2]; same buffer as x: True; x deleted: True" in out
    assert "copies: 0, bytes copied: 0" in out


def run_script(name):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, str(REPO / "examples" / "python" / name)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_seed_pallas_script_from_jax_updates_the_donated_buffer():
    out = run_script("seed_pallas_jax.py")
    assert out.count("same buffer as x: True; x deleted: True; bytes copied: 0, copies: 0") == 3, out


def test_seed_pallas_script_from_torch_updates_x_in_its_own_storage():
    out = run_script("seed_pallas_torch.py")
    for line in ("x = tensor([2, 2, 2, 2], dtype=torch.int32)", "x = tensor([2., 2., 2., 2.])",
                 "x = tensor([2., 2., 2., 2.], dtype=torch.bfloat16)"):
        assert line in out, out
    assert out.count("same storage: True; bytes copied: 0, copies: 0; kernels: ['plus_one_kernel']") == 3, out
    assert "pallas kernel plus_one_kernel" in out and "in place" in out, out


def test_pallas_decode_attention_writes_the_donated_caches_in_place():
    out = run_script("pallas_decode_attention.py")  # the script asserts its error and bytes itself
    assert "200 decode steps into a donated 8x1024x64 f32 KV cache" in out, out
    assert "pallas kernel decode_kernel (grid 8" in out and "in place" in out, out


def test_seed_pallas_script_on_the_insitu_jax_device_updates_the_donated_buffer():
    out = run_script("seed_pallas_jax_device.py")
    assert out.count("on insitu:0; same buffer as x: True; x deleted: True; bytes copied: 0") == 3, out
    assert "y = [2 2 2 2]" in out and "y = [2. 2. 2. 2.]" in out, out
