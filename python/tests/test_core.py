"""insitu.compile and Executable from Python: DLPack in and out without a copy, donation in
place into numpy and torch memory, stats, explain, plugins and the located errors."""
import json
import pathlib

import numpy as np
import pytest

import insitu

ADD_ONE_ALIASED = """HloModule add_one, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  x = f32[4] parameter(0)
  one = f32[] constant(1)
  ones = f32[4] broadcast(one), dimensions={}
  ROOT y = f32[4] add(x, ones)
}
"""

TWO_RESULTS = """HloModule two
ENTRY main {
  x = f32[2,3] parameter(0)
  n = s32[] parameter(1)
  t = f32[3,2] transpose(x), dimensions={1,0}
  m = s32[] multiply(n, n)
  ROOT r = (f32[3,2], s32[]) tuple(t, m)
}
"""


def address(array):
    return np.from_dlpack(array).__array_interface__["data"][0]


def test_result_is_exported_without_a_copy_and_matches():
    exe = insitu.compile(TWO_RESULTS)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t, m = exe(x, np.int32(7))
    assert isinstance(t, insitu.Array) and t.shape == (3, 2) and t.dtype == "f32"
    np.testing.assert_array_equal(np.from_dlpack(t), x.T)
    assert int(np.asarray(m)) == 49
    # Two exports of one result are views of the same memory.
    assert address(t) == address(t)


def test_read_only_argument_is_not_copied_into_the_module_and_stays_unchanged():
    exe = insitu.compile(ADD_ONE_ALIASED)
    x = np.arange(4, dtype=np.float32)
    y = exe(x)
    np.testing.assert_array_equal(x, [0, 1, 2, 3])
    np.testing.assert_array_equal(np.asarray(y), [1, 2, 3, 4])
    stats = exe.stats
    # The aliased parameter was not donated, so the runtime protected it by one copy (as XLA).
    assert stats["bytes_copied"] == 16 and stats["argument_bytes_copied"] == 0


def test_donated_numpy_array_is_written_in_place():
    exe = insitu.compile(ADD_ONE_ALIASED)
    x = np.arange(4, dtype=np.float32)
    y = exe(x, donate=[0])
    np.testing.assert_array_equal(x, [1, 2, 3, 4])
    assert address(y) == x.__array_interface__["data"][0]
    assert exe.stats["bytes_copied"] == 0 and exe.stats["copies_executed"] == 0


def test_donated_torch_tensor_is_written_in_place():
    torch = pytest.importorskip("torch")
    exe = insitu.compile(ADD_ONE_ALIASED)
    t = torch.zeros(4)
    pointer = t.data_ptr()
    y = exe(t, donate=True)
    assert t.tolist() == [1, 1, 1, 1] and t.data_ptr() == pointer
    assert torch.from_dlpack(y).data_ptr() == pointer
    assert exe.stats["bytes_copied"] == 0


def test_donated_insitu_array_is_consumed_and_reuse_names_the_argument():
    exe = insitu.compile(ADD_ONE_ALIASED)
    a = exe(np.zeros(4, np.float32))
    b = exe(a, donate=0)
    assert a.donated and not b.donated
    np.testing.assert_array_equal(np.asarray(b), [2, 2, 2, 2])
    with pytest.raises(insitu.Error, match=r"argument 0 \(parameter 0 \{\}\) was donated to a previous call"):
        exe(a)
    with pytest.raises(insitu.Error, match="donated to a call and is no longer usable"):
        np.from_dlpack(a)


def test_strided_input_is_copied_when_read_and_refused_when_donated():
    exe = insitu.compile(ADD_ONE_ALIASED)
    base = np.arange(8, dtype=np.float32)
    view = base[::2]
    np.testing.assert_array_equal(np.asarray(exe(view)), [1, 3, 5, 7])
    assert exe.stats["argument_bytes_copied"] == 16
    with pytest.raises(insitu.Error, match="not compact row-major.*cannot be written in place"):
        exe(view, donate=True)
    np.testing.assert_array_equal(base, np.arange(8))  # nothing was written


def test_transposed_torch_input_is_read_by_its_strides():
    torch = pytest.importorskip("torch")
    exe = insitu.compile(TWO_RESULTS)
    x = torch.arange(6, dtype=torch.float32).reshape(3, 2).t()  # a [2,3] view with strides (1, 2)
    t, _ = exe(x, torch.tensor(2, dtype=torch.int32))
    np.testing.assert_array_equal(np.asarray(t), x.t().numpy())


def test_python_scalars_and_lists_take_the_parameters_dtype():
    exe = insitu.compile(TWO_RESULTS)
    t, m = exe([[1, 2, 3], [4, 5, 6]], 3)
    np.testing.assert_array_equal(np.asarray(t), [[1, 4], [2, 5], [3, 6]])
    assert int(np.asarray(m)) == 9


def test_bad_arguments_raise_with_the_argument_named():
    exe = insitu.compile(ADD_ONE_ALIASED)
    with pytest.raises(insitu.Error, match=r"argument 0 \(parameter 0 \{\}\): expected f32\[4\], got f32\[3\]"):
        exe(np.zeros(3, np.float32))
    with pytest.raises(insitu.Error, match=r"expected f32\[4\], got f64\[4\]"):
        exe(np.zeros(4))
    with pytest.raises(insitu.Error, match=r"takes 1 argument\(s\).*got 2"):
        exe(np.zeros(4, np.float32), np.zeros(4, np.float32))
    with pytest.raises(IndexError, match="donate: argument 3 does not exist"):
        exe(np.zeros(4, np.float32), donate=[3])


def test_module_errors_are_located():
    with pytest.raises(insitu.Error, match=r"^<module>:3:13: error: unknown opcode 'bogus'"):
        insitu.compile("HloModule m\nENTRY e {\n  x = f32[] bogus()\n}\n")


def test_compile_reads_a_path_and_locates_errors_in_it(tmp_path):
    good = tmp_path / "good.hlo"
    good.write_text(ADD_ONE_ALIASED)
    np.testing.assert_array_equal(np.asarray(insitu.compile(good)(np.zeros(4, np.float32))), [1, 1, 1, 1])
    np.testing.assert_array_equal(np.asarray(insitu.compile(str(good))(np.zeros(4, np.float32))), [1, 1, 1, 1])
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT x = f32[2] add(y, y)\n}\n")
    with pytest.raises(insitu.Error, match=rf"^{bad}:3:"):
        insitu.compile(bad)
    with pytest.raises(insitu.Error, match="cannot read"):
        insitu.compile(tmp_path / "missing.hlo")


def test_explain_as_text_and_json():
    exe = insitu.compile(ADD_ONE_ALIASED)
    assert "alias: output {} is written into parameter 0 {}" in exe.explain()
    report = exe.explain("json")
    assert report["copies"] == [] and report["peak_memory_bytes"] == 16
    assert insitu.explain(ADD_ONE_ALIASED, format="json") == report
    with pytest.raises(ValueError, match="'text' or 'json'"):
        exe.explain("yaml")


def test_unused_donor_is_explained():
    text = """HloModule m, buffer_donor={ (0, {}) }
ENTRY e {
  x = f32[4] parameter(0)
  ROOT y = f32[2] slice(x), slice={[0:2]}
}
"""
    report = insitu.explain(text, format="json")
    assert len(report["unused_donors"]) == 1
    with pytest.raises(insitu.Error, match="donat"):
        insitu.compile(text, strict_donation=True)


def test_parameters_and_optimized_text():
    exe = insitu.compile(ADD_ONE_ALIASED)
    [parameter] = exe.parameters
    assert parameter["dtype"] == "f32" and parameter["shape"] == (4,) and parameter["aliased"]
    assert "input_output_alias" in exe.optimized_text
    assert exe.fallback_ops == []


def test_kernel_plugin_runs_in_place(examples_plugin):
    text = """HloModule plus_one, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  x = f32[8] parameter(0)
  ROOT y = f32[8] custom-call(x), custom_call_target="plus_one", output_to_operand_aliasing={{}: (0, {})}
}
"""
    exe = insitu.compile(text)
    x = np.zeros(8, np.float32)
    exe(x, donate=True)
    np.testing.assert_array_equal(x, np.ones(8))
    assert exe.stats["bytes_copied"] == 0
    with pytest.raises(insitu.Error, match="must"):
        exe(np.zeros(8, np.float32))  # must-alias: the caller has to donate
    insitu.load_plugin(examples_plugin)  # a second load changes nothing
    with pytest.raises(insitu.Error, match="no such file"):
        insitu.load_plugin("/nonexistent/libkernels.so")


def test_threads_and_timeout_are_accepted():
    exe = insitu.compile(ADD_ONE_ALIASED)
    assert exe.stats == {}  # no call yet
    with pytest.raises(insitu.Error):
        exe(np.zeros(5, np.float32))
    assert exe.stats == {}  # a failed call leaves none
    for threads in (1, 2, 0):
        np.testing.assert_array_equal(np.asarray(exe(np.zeros(4, np.float32), threads=threads)), [1, 1, 1, 1])
    assert exe.stats["threads"] == 0
    exe(np.zeros(4, np.float32), timeout=10.0)


def test_seed_module_says_why_its_donor_was_not_usable():
    seed = pathlib.Path(__file__).resolve().parents[2] / "examples" / "seed" / "sync_tensors_graph.before_optimizations.hlo"
    report = insitu.explain(seed, format="json")
    [unused] = report["unused_donors"]
    assert unused["reason"] == "output-needs-copy"
    assert "output_to_operand_aliasing={{}: (0, {})}" in insitu.explain(seed)


def test_example_module_runs_the_plugin_kernel_in_place(examples_plugin):
    exe = insitu.compile(pathlib.Path(__file__).resolve().parents[2] / "examples" / "hlo" / "plus_one_inplace.hlo")
    [parameter] = exe.parameters
    assert parameter["dtype"] == "s32" and parameter["aliased"]  # buffer_donor became an alias
    x = np.arange(4, dtype=np.int32)
    [y] = exe(x, donate=True)
    np.testing.assert_array_equal(x, [1, 2, 3, 4])
    assert address(y) == x.__array_interface__["data"][0]
    assert exe.stats["bytes_copied"] == 0 and exe.stats["fallback_ops_executed"] == 0
    json.dumps(exe.stats)


def test_compile_for_cuda_runs_on_the_gpu_or_says_why_not():
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda', not 'tpu'"):
        insitu.compile(ADD_ONE_ALIASED, device="tpu")
    try:
        exe = insitu.compile(ADD_ONE_ALIASED, device="cuda")
    except insitu.Error as error:  # no GPU here: the driver's reason, never a CPU run instead
        assert "CUDA" in str(error) or "GPU" in str(error), str(error)
        return
    x = np.arange(4, dtype=np.float32)
    y = exe(x, donate=[0])
    np.testing.assert_array_equal(x, [1, 2, 3, 4])
    assert address(y) == x.__array_interface__["data"][0]
    stats = exe.stats
    assert stats["device"] != "cpu" and stats["bytes_to_device"] == 16 and stats["bytes_to_host"] == 16
