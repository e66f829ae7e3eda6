"""The narrow element types (f8*, f4e2m1fn, s4, u4, s2, u2) as values, in the evaluator
(`insitu run --reference`) and the runtime (`insitu run`), against two oracles: ml_dtypes for
every conversion (every code decoded, a million f32 values and every midpoint encoded) and
XLA:CPU (through jax) for integer arithmetic on every pair of values."""
import pathlib
import subprocess

import ml_dtypes
import numpy as np
import pytest

FLOATS = {
    "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e4m3": ml_dtypes.float8_e4m3, "f8e5m2": ml_dtypes.float8_e5m2,
    "f8e3m4": ml_dtypes.float8_e3m4, "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "f8e8m0fnu": ml_dtypes.float8_e8m0fnu, "f4e2m1fn": ml_dtypes.float4_e2m1fn,
}


def run_cli(build_dir, module_text, arguments, tmp_path, reference):
    """Runs `insitu run` (or --reference) on the module with .npy arguments; the saved results."""
    module = tmp_path / "module.hlo"
    module.write_text(module_text)
    command = [str(build_dir / "tools" / "insitu"), "run", str(module)]
    for i, argument in enumerate(arguments):
        path = tmp_path / f"arg{i}.npy"
        np.save(path, argument)
        command += ["--arg", str(path)]
    out = tmp_path / ("reference" if reference else "runtime")
    command += ["--save", str(out), "--stats", str(tmp_path / "stats.json")]
    if reference:
        command.append("--reference")
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [np.load(out / f"output_{i}.npy") for i in range(len(list(out.glob("output_*.npy"))))]


def probe_values(numpy_type):
    """A million f32 bit patterns, every value of the format and the midpoints between neighbours
    (and the floats either side of each midpoint): where rounding decides."""
    rng = np.random.default_rng(7)
    bits = np.concatenate([np.arange(0, 2**32, 4801, dtype=np.uint64),
                           rng.integers(0, 2**32, 100_000, dtype=np.uint64)]).astype(np.uint32)
    values = [bits.view(np.float32)]
    with np.errstate(all="ignore"):
        codes = np.arange(256, dtype=np.uint8).view(numpy_type).astype(np.float64)
    finite = np.unique(codes[np.isfinite(codes)])
    middles = ((finite[1:] + finite[:-1]) / 2).astype(np.float32)
    values += [middles, np.nextafter(middles, np.float32(np.inf)), np.nextafter(middles, np.float32(-np.inf)),
               finite.astype(np.float32), np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0], np.float32)]
    return np.concatenate(values)


@pytest.mark.parametrize("name", sorted(FLOATS))
def test_float_conversions_match_ml_dtypes(name, build_dir, tmp_path):
    numpy_type = FLOATS[name]
    values = probe_values(numpy_type)
    n = values.size
    # f4e2m1fn is 4 bits: its bits go through u4 (bitcast-convert keeps the width).
    bits_type, code_count = ("u4", 16) if name == "f4e2m1fn" else ("u8", 256)
    module = f"""HloModule convert_{name}
ENTRY main {{
  x = f32[{n}] parameter(0)
  codes = u8[{code_count}] parameter(1)
  narrow = {name}[{n}] convert(x)
  narrow_bits = {bits_type}[{n}] bitcast-convert(narrow)
  encoded = u8[{n}] convert(narrow_bits)
  code_bits = {bits_type}[{code_count}] convert(codes)
  decoded_narrow = {name}[{code_count}] bitcast-convert(code_bits)
  decoded = f32[{code_count}] convert(decoded_narrow)
  ROOT r = (u8[{n}], f32[{code_count}]) tuple(encoded, decoded)
}}
"""
    codes = np.arange(code_count, dtype=np.uint8)
    with np.errstate(all="ignore"):
        expected_encoded = values.astype(numpy_type).view(np.uint8)
        expected_decoded = codes.view(numpy_type).astype(np.float32)
    for reference in (True, False):
        encoded, decoded = run_cli(build_dir, module, [values, codes], tmp_path, reference)
        wrong = np.nonzero(encoded != expected_encoded)[0]
        assert wrong.size == 0, (reference, [(float(values[i]), int(encoded[i]), int(expected_encoded[i]))
                                             for i in wrong[:8]])
        np.testing.assert_array_equal(decoded, expected_decoded)
        np.testing.assert_array_equal(np.signbit(decoded), np.signbit(expected_decoded))


INTEGERS = {"s4": ("int4", -8, 8), "u4": ("uint4", 0, 16), "s2": ("int2", -2, 2), "u2": ("uint2", 0, 4)}


@pytest.mark.parametrize("name", sorted(INTEGERS))
def test_integer_arithmetic_matches_xla_cpu(name, build_dir, tmp_path):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax import lax

    jax_name, low, high = INTEGERS[name]
    narrow = getattr(jnp, jax_name)
    values = np.arange(low, high, dtype=np.int32)
    a = np.repeat(values, values.size)
    b = np.tile(values, values.size)
    binary = [lax.add, lax.sub, lax.mul, lax.div, lax.rem, lax.max, lax.min, lax.bitwise_and, lax.bitwise_or,
              lax.bitwise_xor, lax.shift_left, lax.shift_right_logical, lax.shift_right_arithmetic, lax.lt, lax.ge]
    unary = [lax.clz, lax.neg, lax.bitwise_not, lambda x: x.astype(jnp.float32)]  # jax refuses abs on int4

    def program(a, b):
        x, y = a.astype(narrow), b.astype(narrow)
        return ([op(x, y).astype(jnp.int32) for op in binary] + [op(x).astype(jnp.int32) for op in unary] +
                [lax.population_count(x).astype(jnp.int32)])

    lowered = jax.jit(program).lower(a, b)
    expected = [np.asarray(r) for r in jax.jit(program)(a, b)]
    # population_count: XLA:CPU counts the bits of the value sign-extended to a byte (s4 -8 has
    # popcount 5 there); the count of the type's own bits is the op's meaning (XLA's evaluator and
    # StableHLO), and insitu's.
    width = {"s4": 4, "u4": 4, "s2": 2, "u2": 2}[name]
    counts = np.array([bin(int(v) & ((1 << width) - 1)).count("1") for v in a], np.int32)
    expected[-1] = counts.astype(getattr(ml_dtypes, jax_name)).astype(np.int32)  # s2 holds 2 as -2
    module = lowered.as_text(dialect="hlo")
    for reference in (True, False):
        results = run_cli(build_dir, module, [a, b], tmp_path, reference)
        assert len(results) == len(expected)
        for i, (got, want) in enumerate(zip(results, expected)):
            np.testing.assert_array_equal(got, want, err_msg=f"result {i}, reference={reference}")


def test_narrow_arrays_cross_npy_as_ml_dtypes_writes_them(build_dir, tmp_path):
    module = """HloModule double
ENTRY main {
  x = f8e4m3fn[4] parameter(0)
  i = s4[4] parameter(1)
  ROOT r = (f8e4m3fn[4], s4[4]) tuple(f8e4m3fn[4] add(x, x), s4[4] add(i, i))
}
"""
    x = np.array([1, -2.5, 200, 0.125], dtype=ml_dtypes.float8_e4m3fn)
    i = np.array([3, -4, 7, -8], dtype=ml_dtypes.int4)
    for reference in (True, False):
        doubled, wrapped = run_cli(build_dir, module, [x, i], tmp_path, reference)
        assert doubled.dtype == np.dtype("V1") and wrapped.dtype == np.dtype("V1")
        np.testing.assert_array_equal(doubled.view(ml_dtypes.float8_e4m3fn).astype(np.float32),
                                      (x.astype(np.float32) * 2).astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
        np.testing.assert_array_equal(wrapped.view(ml_dtypes.int4).astype(np.int32), [6, -8, -2, 0])


def test_float8_crosses_dlpack_with_torch_and_jax():
    import insitu
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    exe = insitu.compile("""HloModule square
ENTRY main {
  x = f8e4m3fn[3] parameter(0)
  ROOT y = f8e4m3fn[3] multiply(x, x)
}
""")
    t = torch.tensor([1.5, -3.0, 20.0]).to(torch.float8_e4m3fn)
    result = exe(t)
    assert result.dtype == "f8e4m3fn"
    expected = (t.float() * t.float()).to(torch.float8_e4m3fn)  # 400 rounds to 384
    assert torch.equal(torch.from_dlpack(result).view(torch.uint8), expected.view(torch.uint8))
    j = jnp.asarray([1.5, -3.0, 20.0], dtype=jnp.float8_e4m3fn)
    np.testing.assert_array_equal(np.asarray(jnp.from_dlpack(exe(j))).astype(np.float32), [2.25, 9, 384])


def test_float8_e5m2_saved_as_f1_is_read(build_dir, tmp_path):
    """ml_dtypes 0.7 writes float8_e5m2 (alone) with the descriptor '<f1'."""
    module = """HloModule negate
ENTRY main {
  x = f8e5m2[3] parameter(0)
  ROOT y = f32[3] convert(f8e5m2[3] negate(x))
}
"""
    x = np.array([1.5, -2, 57344], dtype=ml_dtypes.float8_e5m2)
    for reference in (True, False):
        (result,) = run_cli(build_dir, module, [x], tmp_path, reference)
        np.testing.assert_array_equal(result, [-1.5, 2, -57344])
