"""insitu from Python: compile XLA HLO text, run it in place on arrays shared by DLPack.

    import insitu, numpy as np
    exe = insitu.compile(open("step.hlo").read())     # or insitu.compile(pathlib.Path("step.hlo"))
    cache = np.zeros((1024, 768), np.float32)
    out = exe(cache, token, donate=[0])               # cache is written in place, no copy
    np.from_dlpack(out)                               # insitu.Array exports __dlpack__
    exe.stats["bytes_copied"], print(exe.explain())   # what was copied, and why

Arrays cross without a copy in both directions: any CPU array with ``__dlpack__`` (numpy, torch,
jax, insitu.Array) is read where it lies, and a donated one is written where it lies, so a
donated torch tensor or numpy array holds the results afterwards. A donated insitu.Array is
consumed: using it again raises insitu.Error naming the argument. Everything that goes wrong
raises insitu.Error with the message (and, for module text, the line:column) the CLI prints.

Submodules: ``insitu.jax`` (``insitu.jax.jit``, a drop-in for ``jax.jit``).
"""
from __future__ import annotations

import json as _json
import os as _os
import sys as _sys

# Kernel plugins (load_plugin) bind to the kernel registry inside this extension, as they bind
# to the insitu binary's: its symbols must be global.
_flags = _sys.getdlopenflags()
_sys.setdlopenflags(_flags | _os.RTLD_GLOBAL)
try:
    from . import _insitu
finally:
    _sys.setdlopenflags(_flags)

Error = _insitu.Error
Array = _insitu.Array

__all__ = ["Array", "Error", "Executable", "compile", "explain", "load_plugin", "default_threads"]

#: Worker threads a call uses when it does not say (0: every core).
default_threads = 0


_BYTECODE_MAGIC = b"ML\xefR"


def _module_text(hlo):
    """(text, name used in error locations) from module text (HLO, or StableHLO as
    lowered.as_text() prints it), a path to a .hlo or .mlir file, or StableHLO as bytes or a path
    (.mlirbc: a VHLO artifact in MLIR bytecode, as JAX hands it to a PJRT plugin; or a jax.export
    artifact, Exported.serialize()), which stays bytes."""
    if isinstance(hlo, _os.PathLike) or (isinstance(hlo, str) and "\n" not in hlo and hlo.endswith((".hlo", ".mlir", ".mlirbc", ".jax_export"))):
        path = _os.fspath(hlo)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise Error(f"cannot read '{path}': {e.strerror}") from None
        if data.startswith(_BYTECODE_MAGIC) or b"\0" in data[:4096]:  # bytecode, or jax.export's FlatBuffer
            return data, path
        try:
            return data.decode("utf-8"), path
        except UnicodeDecodeError as e:
            raise Error(f"'{path}' is neither HLO text (UTF-8) nor MLIR bytecode: {e}") from None
    if isinstance(hlo, (bytes, bytearray, memoryview)):
        hlo = bytes(hlo)
        if hlo.startswith(_BYTECODE_MAGIC) or b"\0" in hlo[:4096]:
            return hlo, "<bytecode>"
        hlo = hlo.decode("utf-8")
    if not isinstance(hlo, str):
        raise TypeError(f"expected HLO module text or a path to a .hlo file, got {type(hlo).__name__}")
    return hlo, "<module>"


class Executable:
    """A compiled module. Call it with one array per entry-parameter leaf (tuple parameters
    flattened depth-first); it returns an insitu.Array, or a tuple of them when the module's
    result is a tuple (leaves flattened depth-first)."""

    def __init__(self, core):
        self._core = core

    def __call__(self, *args, donate=None, threads=None, timeout=0.0):
        """donate: True (all), an argument index, or indices; donated arrays are written in
        place where the module aliases them. threads: worker threads (default
        insitu.default_threads; 1 runs on the calling thread). timeout: seconds, 0 for none."""
        return self._core(args, donate=donate, threads=default_threads if threads is None else threads,
                          timeout=timeout)

    @property
    def stats(self) -> dict:
        """The last call's statistics: copies_executed, bytes_copied, peak_memory_bytes,
        run_seconds, fallback_ops_executed, copies_in_module (name and reason of each),
        compile_seconds, unused_donors, argument_bytes_copied (inputs that were not row-major),
        result_bytes_copied (results copied into an XLA call's buffers, insitu.jax's
        "xla-ffi" path), threads; on device="cuda" also device (the GPU's name),
        bytes_to_device, bytes_to_host and kernels_launched. Empty before the first call."""
        return _json.loads(self._core._stats_json()) or {}

    def explain(self, format: str = "text"):
        """Why each copy of the optimized module exists, what aliases what, donors left unused
        and why, peak memory: text, or the CLI's JSON schema as a dict (format="json")."""
        text = self._core._explain(format)
        return _json.loads(text) if format == "json" else text

    @property
    def optimized_text(self) -> str:
        """The optimized module as HLO text."""
        return self._core.optimized_text

    @property
    def parameters(self) -> list:
        """One dict per argument: name, dtype, shape, aliased (input_output_alias), must_alias."""
        return self._core.parameters

    @property
    def fallback_ops(self) -> list:
        """Instructions the runtime runs through the reference evaluator (none is the goal)."""
        return self._core.fallback_ops


def compile(hlo, *, strict_donation: bool = False, max_memory_bytes: int = 0, device: str = "cpu") -> Executable:
    """Parses, verifies and optimizes HLO text (XLA's format; or a path to a .hlo file), StableHLO
    text (as jax.jit(f).lower(x).as_text() prints it; or a .mlir path), or a VHLO artifact (MLIR
    bytecode as bytes or a .mlirbc path: StableHLO as JAX serializes it), and
    builds it for the runtime. strict_donation: a donated buffer that cannot be used is an
    error instead of a note in explain. max_memory_bytes: refuse a module whose peak is larger
    (0: what the machine has). device: "cpu", or "cuda" for GPU 0 (insitu.Error saying why
    where there is none, or naming the first op it cannot run); arguments and results stay
    host arrays, copied to the GPU and back on each call (stats: bytes_to_device,
    bytes_to_host), and a donated argument aliased to an output is still updated in place."""
    text, name = _module_text(hlo)
    return Executable(_insitu._compile(text, name, strict_donation, max_memory_bytes, device))


def explain(hlo, format: str = "text"):
    """`insitu explain` for module text or a path: text, or a dict with format="json"."""
    text, name = _module_text(hlo)
    out = _insitu._explain(text, name, format)
    return _json.loads(out) if format == "json" else out


def load_plugin(path) -> None:
    """Loads a kernel plugin (.so that registers kernels with INSITU_REGISTER_KERNEL) so that
    modules can call its kernels as custom calls. Loading one twice does nothing."""
    _insitu._load_plugin(_os.fspath(path))
