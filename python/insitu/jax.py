"""insitu.jax.jit: jax.jit's interface, with insitu compiling and running the program.

    import insitu.jax
    step = insitu.jax.jit(decode_step, donate_argnums=(1,))   # as jax.jit
    logits, cache = step(params, cache, token)                 # cache updated in place

JAX traces and lowers the function (``jax.jit(fn, ...).lower(*args)``, HLO text with the
donation as ``input_output_alias``); insitu optimizes and runs that module. Pytrees go in and out
as with jax.jit; one executable per (argument structure, shapes, dtypes, weak types, static
arguments), built on first use. Donated jax.Arrays are deleted after the call, as jax.jit does;
their buffers were written in place. ``fn.lower(*args)`` and ``fn.executable(*args)`` give the
lowered JAX object and the insitu Executable (for ``.explain()`` and ``.stats``).

How a call reaches insitu (``fn.dispatch``):

- ``"xla-ffi"`` (when insitu's extension was built with jaxlib's headers, as the repository's
  build is): the function is a ``jax.jit`` of one custom call, the XLA FFI target
  ``insitu_call``, whose handler runs the insitu executable on XLA's buffers. jax.jit's own C++
  dispatch flattens the pytrees, keys the cache and makes the result arrays, so a call costs
  about what a jax.jit call costs. Arguments are read in place; a donated argument is the
  memory of its aliased result (``input_output_aliases``), written in place; every other result
  is computed straight into the buffer XLA gives it. Only a result that is a parameter or a
  constant is copied there (``stats["result_bytes_copied"]``). The thread count
  (insitu.default_threads or ``threads=``) is fixed when a signature is first traced. A failure
  inside insitu surfaces as JAX's runtime error carrying insitu's located message, when JAX
  reports it (at the call, or at ``block_until_ready`` under asynchronous dispatch).
- ``"dlpack"`` (otherwise, or asked for with ``dispatch="dlpack"``): Python flattens the
  arguments, hands them to insitu by DLPack without a copy and wraps the results as jax.Arrays
  over insitu's memory; failures raise insitu.Error. About 2.5x jax.jit's call overhead.

Custom calls a program makes with ``jax.ffi.ffi_call("NAME", ...)`` run the insitu kernel
registered as NAME (insitu.load_plugin), in place when the kernel aliases its operands.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import insitu

__all__ = ["jit"]


def _as_tuple(value):
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    return tuple(value)


@functools.cache
def _lowering_parameters():
    try:
        from insitu import pallas
    except ImportError:  # a jax without Pallas: nothing to override
        from jax._src.interpreters import mlir

        return mlir.LoweringParameters()
    return pallas.lowering_parameters()


def _signature(leaf):
    if isinstance(leaf, (jax.Array, np.ndarray)):
        return (leaf.shape, leaf.dtype, getattr(leaf, "weak_type", False))
    if isinstance(leaf, (bool, int, float, complex)):
        return (type(leaf),)  # a Python scalar lowers to a weakly typed scalar
    return (np.shape(leaf), np.result_type(leaf), False)


class _Bridge:
    """jax.Array <-> insitu without a copy, at the cost of jax's own low-level calls.

    jax.dlpack.from_dlpack costs about 100 us a call (device look-ups, then jnp.asarray) and
    jax.Array.__dlpack__ about 3 us; the calls they make underneath cost a tenth of that, so
    they are used directly when this jax has them (the pinned one does), else the public API."""

    def __init__(self):
        try:
            from jax._src.array import ArrayImpl
            from jax._src.lib import _jax

            self.array_type = ArrayImpl
            self.export = _jax.buffer_to_dlpack_managed_tensor
            self.convert = _jax.dlpack_managed_tensor_to_buffer
            self.device = jax.devices("cpu")[0]
        except Exception:  # another jax: the public path
            self.array_type, self.convert = None, None
        self.kept = {np.dtype(t) for t in ("float32", "float16", "int32", "int8", "int16", "uint8", "uint16",
                                           "uint32", "bool", "complex64")} | {np.dtype(jnp.bfloat16)}
        self.wide = {np.dtype(t) for t in ("float64", "int64", "uint64", "complex128")}  # kept only with x64

    def key(self, leaf):
        return leaf.aval if type(leaf) is self.array_type else _signature(leaf)

    def to_insitu(self, leaf, donated=False):
        """A leaf as something insitu reads by DLPack: a capsule for a jax array. A donated one
        is exported through its single shard, as __dlpack__ does: the array itself is deleted
        after the call while the capsule still holds its buffer (deleting an array whose own
        buffer is exported aborts)."""
        if type(leaf) is self.array_type:
            try:
                return self.export(leaf.addressable_data(0) if donated else leaf, stream=None)
            except Exception:  # sharded over devices, say: the public protocol says why
                return leaf
        return leaf

    def to_jax(self, array):
        if self.convert is not None:
            out = self.convert(array._capsule(), self.device, None, None, 1)
            if out.dtype in self.kept or (out.dtype in self.wide and jax.config.jax_enable_x64):
                return out
        return jax.dlpack.from_dlpack(array)


_FFI_TARGET = "insitu_call"
_ffi_registered = None


def _ffi_ready():
    """Whether the XLA FFI path is available: the extension has the handler and JAX took it."""
    global _ffi_registered
    if _ffi_registered is None:
        handler = getattr(insitu._insitu, "_xla_ffi_handler", None)
        _ffi_registered = False
        if handler is not None:
            try:
                jax.ffi.register_ffi_target(_FFI_TARGET, handler(), platform="cpu")
                _ffi_registered = True
            except Exception:  # a jax without the FFI API: the DLPack path
                pass
    return _ffi_registered


def _aval_key(leaf):
    """What of an argument leaf the executable depends on: shape, dtype, weak type (the same for
    a concrete array, a Python scalar and the tracer jax.jit makes of either)."""
    aval = jax.typeof(leaf)
    return (aval.shape, aval.dtype, getattr(aval, "weak_type", False))


def _abstract(args, static_argnums):
    """The arguments as jax.ShapeDtypeStructs (static ones as they are), to lower without values."""
    def spec(leaf):
        shape, dtype, weak_type = _aval_key(leaf)
        return jax.ShapeDtypeStruct(shape, dtype, weak_type=weak_type)

    return [arg if i in static_argnums else jax.tree_util.tree_map(spec, arg) for i, arg in enumerate(args)]


def jit(fn=None, *, donate_argnums=(), static_argnums=(), threads=None, dispatch=None, device="cpu"):
    """Like ``jax.jit(fn, donate_argnums=..., static_argnums=...)``, run by insitu.

    threads: worker threads per call (default insitu.default_threads). dispatch: "xla-ffi",
    "dlpack" or None (the first where this build has it; see the module's text). device: where
    insitu runs the program, "cpu" or "cuda" (insitu.compile's device: JAX's arrays stay on the
    host and are copied to the GPU and back per call, counted in the stats). Usable as a
    decorator, with or without arguments."""
    if fn is None:
        return functools.partial(jit, donate_argnums=donate_argnums, static_argnums=static_argnums, threads=threads,
                                 dispatch=dispatch, device=device)
    if dispatch not in (None, "xla-ffi", "dlpack"):
        raise ValueError(f"dispatch must be 'xla-ffi', 'dlpack' or None, not {dispatch!r}")
    if dispatch == "xla-ffi" and not _ffi_ready():
        raise insitu.Error("dispatch='xla-ffi' needs insitu's extension built with jaxlib's headers "
                           "(python/CMakeLists.txt finds them with jax.ffi.include_dir()); this one was not")
    donate_argnums = _as_tuple(donate_argnums)
    static_argnums = _as_tuple(static_argnums)
    # keep_unused: the module's parameters are every leaf, in order, so the call can pass them.
    jitted = jax.jit(fn, donate_argnums=donate_argnums, static_argnums=static_argnums, keep_unused=True)
    cache = {}
    name = getattr(fn, "__name__", "the function")

    def split(args):
        """(leaves, treedef, static arguments) of a call."""
        if static_argnums:
            statics = tuple(args[i] for i in static_argnums if i < len(args))
            args = [arg for i, arg in enumerate(args) if i not in static_argnums]
        else:
            statics = ()
        leaves, treedef = jax.tree_util.tree_flatten(args)
        return leaves, treedef, statics

    def build(args):
        # pl.pallas_call lowers to insitu's grid loop in this lowering only (insitu/pallas.py)
        lowered = jitted.trace(*args).lower(_private_parameters=_lowering_parameters())
        executable = insitu.compile(lowered.as_text(dialect="hlo"), device=device)
        donated = []  # per leaf: its argument number when donated, else None
        for i, arg in enumerate(args):
            if i not in static_argnums:
                donated.extend([i if i in donate_argnums else None] * len(jax.tree_util.tree_leaves(arg)))
        flags = [k for k, argnum in enumerate(donated) if argnum is not None]
        return executable, lowered, flags, donated

    through_xla = dispatch != "dlpack" and _ffi_ready()
    bridge = None if through_xla else _Bridge()
    leaf_key = _aval_key if through_xla else bridge.key

    def lookup(args):
        """(what build made for this signature or None, the argument leaves, the key): one flatten."""
        leaves, treedef, statics = split(args)
        key = (treedef, statics, tuple(map(leaf_key, leaves)))
        return cache.get(key), leaves, key

    def entry(args):
        """((executable, lowered, flags, donated), leaves) of a call, built on first use."""
        found, leaves, key = lookup(args)
        if found is None:
            found = cache[key] = build(_abstract(args, static_argnums) if through_xla else args)
        return found, leaves

    def deleted_donation(found, leaves):
        """insitu.Error naming a donated argument that an earlier call consumed, or None."""
        _, _, flags, donated = found
        for k in flags:
            if isinstance(leaves[k], jax.Array) and leaves[k].is_deleted():
                return insitu.Error(f"argument {donated[k]} of {name} was donated to an earlier call and deleted; "
                                    "pass the array that call returned")
        return None

    if through_xla:
        @functools.wraps(fn)  # fn's name and signature (jax.jit reads the signature for argnums)
        def traced(*args):  # traced by jax.jit once per signature: one call of the insitu executable
            (executable, lowered, flags, _), leaves = entry(args)
            results = [jax.ShapeDtypeStruct(info.shape, info.dtype) for info in jax.tree_util.tree_leaves(lowered.out_info)]
            aliases = {k: p["aliased_output"] for k, p in enumerate(executable.parameters)
                       if k in flags and p["aliased_output"] is not None}
            count = insitu.default_threads if threads is None else threads
            outputs = jax.ffi.ffi_call(_FFI_TARGET, results, input_output_aliases=aliases)(
                *leaves, executable=np.int64(executable._core._ffi_id()), threads=np.int32(count))
            return jax.tree_util.tree_unflatten(lowered.out_tree, outputs)

        outer = jax.jit(traced, donate_argnums=donate_argnums, static_argnums=static_argnums, keep_unused=True)
        if donate_argnums:
            @functools.wraps(fn)
            def call(*args):
                try:
                    return outer(*args)
                except Exception as error:  # JAX's "Array has been deleted": say which argument
                    found, leaves, _ = lookup(args)
                    named = deleted_donation(found, leaves) if found else None
                    if named is not None:
                        raise named from error
                    raise
        else:
            call = outer  # jax.jit's own object: no Python frame between the caller and its dispatch

        call.dispatch = "xla-ffi"
    else:
        @functools.wraps(fn)
        def call(*args):
            found, leaves = entry(args)
            executable, lowered, flags, _ = found
            if flags:
                named = deleted_donation(found, leaves)
                if named is not None:
                    raise named
            inputs = list(map(bridge.to_insitu, leaves))
            for k in flags:
                inputs[k] = bridge.to_insitu(leaves[k], donated=True)
            results = executable._core(tuple(inputs), donate=flags,
                                       threads=insitu.default_threads if threads is None else threads, timeout=0.0)
            if not isinstance(results, tuple):
                results = (results,)
            outputs = list(map(bridge.to_jax, results))
            for k in flags:
                if isinstance(leaves[k], jax.Array):
                    leaves[k].delete()
            return jax.tree_util.tree_unflatten(lowered.out_tree, outputs)

        call.dispatch = "dlpack"

    call.lower = lambda *args: entry(args)[0][1]
    call.executable = lambda *args: entry(args)[0][0]
    return call
