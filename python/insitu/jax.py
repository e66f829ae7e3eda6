"""insitu.jax.jit: jax.jit's interface, with insitu compiling and running the program.

    import insitu.jax
    step = insitu.jax.jit(decode_step, donate_argnums=(1,))   # as jax.jit
    logits, cache = step(params, cache, token)                 # cache updated in place

JAX traces and lowers the function (``jax.jit(fn, ...).lower(*args)``, HLO text with the
donation as ``input_output_alias``); insitu optimizes and runs that module. Pytrees go in and out
as with jax.jit; one executable per (argument structure, shapes, dtypes, weak types, static
arguments), built on first use. Arrays cross by DLPack without a copy, and results come back as
jax.Arrays over insitu's memory. Donated jax.Arrays are deleted after the call, as jax.jit does;
their buffers were written in place. ``fn.lower(*args)`` and ``fn.executable(*args)`` give the
lowered JAX object and the insitu Executable (for ``.explain()`` and ``.stats``).

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


def _signature(leaf):
    if isinstance(leaf, (jax.Array, np.ndarray)):
        return (leaf.shape, leaf.dtype, getattr(leaf, "weak_type", False))
    if isinstance(leaf, (bool, int, float, complex)):
        return (type(leaf),)  # a Python scalar lowers to a weakly typed scalar
    return (np.shape(leaf), np.result_type(leaf), False)


def _public_to_jax(array):
    return jax.dlpack.from_dlpack(array)


def _make_to_jax():
    """insitu.Array -> jax.Array over the same memory. jax.dlpack.from_dlpack costs about 100 us
    a call (device look-ups, then jnp.asarray); the call it makes underneath costs a tenth of
    that, so it is used directly when this jax has it (the pinned one does), for the dtypes jax
    keeps as they are."""
    try:
        from jax._src.lib import _jax

        convert = _jax.dlpack_managed_tensor_to_buffer
        device = jax.devices("cpu")[0]
        canonical = {np.dtype(t) for t in ("float32", "float16", "int32", "int8", "int16", "uint8", "uint16",
                                           "uint32", "bool", "complex64")}
        canonical.add(jnp.bfloat16.dtype if hasattr(jnp.bfloat16, "dtype") else np.dtype(jnp.bfloat16))
        wide = {np.dtype(t) for t in ("float64", "int64", "uint64", "complex128")}  # kept only with x64
    except Exception:  # another jax: the public path
        return _public_to_jax

    def to_jax(array):
        out = convert(array.__dlpack__(max_version=(1, 0)), device, None, None, 1)
        if out.dtype in canonical or (out.dtype in wide and jax.config.jax_enable_x64):
            return out
        return _public_to_jax(array)

    return to_jax


def jit(fn=None, *, donate_argnums=(), static_argnums=(), threads=None):
    """Like ``jax.jit(fn, donate_argnums=..., static_argnums=...)``, run by insitu.

    threads: worker threads per call (default insitu.default_threads). Usable as a decorator,
    with or without arguments."""
    if fn is None:
        return functools.partial(jit, donate_argnums=donate_argnums, static_argnums=static_argnums, threads=threads)
    donate_argnums = _as_tuple(donate_argnums)
    static_argnums = _as_tuple(static_argnums)
    # keep_unused: the module's parameters are every leaf, in order, so the call can pass them.
    jitted = jax.jit(fn, donate_argnums=donate_argnums, static_argnums=static_argnums, keep_unused=True)
    cache = {}
    to_jax = _make_to_jax()

    def split(args):
        dynamic, donated = [], []  # donated: per leaf, its argument number when donated, else None
        for i, arg in enumerate(args):
            if i in static_argnums:
                continue
            leaves = jax.tree_util.tree_leaves(arg)
            dynamic.append(arg)
            donated.extend([i if i in donate_argnums else None] * len(leaves))
        statics = tuple(args[i] for i in static_argnums if i < len(args))
        leaves, treedef = jax.tree_util.tree_flatten(dynamic)
        return leaves, treedef, statics, donated

    def entry(args):
        leaves, treedef, statics, donated = split(args)
        key = (treedef, tuple(_signature(leaf) for leaf in leaves), statics)
        found = cache.get(key)
        if found is None:
            lowered = jitted.lower(*args)
            text = lowered.as_text(dialect="hlo")
            executable = insitu.compile(text)
            found = cache[key] = (executable, lowered.out_tree, lowered)
        return found, leaves, donated

    @functools.wraps(fn)
    def call(*args):
        (executable, out_tree, _), leaves, donated = entry(args)
        for leaf, argnum in zip(leaves, donated):
            if argnum is not None and isinstance(leaf, jax.Array) and leaf.is_deleted():
                raise insitu.Error(f"argument {argnum} of {getattr(fn, '__name__', 'the function')} was donated to an "
                                   "earlier call and deleted; pass the array that call returned")
        flags = [i for i, argnum in enumerate(donated) if argnum is not None]
        results = executable(*leaves, donate=flags, threads=threads)
        if not isinstance(results, tuple):
            results = (results,)
        outputs = [to_jax(r) for r in results]
        for leaf, argnum in zip(leaves, donated):
            if argnum is not None and isinstance(leaf, jax.Array):
                leaf.delete()
        return jax.tree_util.tree_unflatten(out_tree, outputs)

    call.lower = lambda *args: entry(args)[0][2]
    call.executable = lambda *args: entry(args)[0][0]
    return call
