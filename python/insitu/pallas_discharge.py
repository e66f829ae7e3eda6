"""Masked Pallas loads and stores (``plgpu.load``/``plgpu.store``: the ``masked_load`` and
``masked_swap`` primitives) discharged without rewriting the whole ref, used while insitu's
lowering discharges a kernel (pallas.py, :func:`masked_access_rules`).

JAX's own discharge rules (jax/_src/pallas/primitives.py) pad the whole ref at its end by the
slice's size, so that a slice running past the end is not moved back the way dynamic_slice moves
it, then slice or update and pad back: every masked load and store copies the whole array, and a
grid of such steps costs steps x array size (a Triton-style axpy over 4M f32 in 64 steps wrote
4.4 GB a call and took 5.6 s; 2.3 ms with these rules, what the unmasked kernel takes).

These rules give the same values (bit for bit; tests/test_pallas_parallel.py checks them against
interpret mode at starts before, inside and past the end) while touching only the slice:

- the window ``r = clamp(start, 0, size_of_dim - slice)`` is what dynamic_slice reads, and the
  slice's elements lie at ``shift = max(start - r, 0)`` inside it (a negative start first wraps
  once, past the end of JAX's padded ref, as lax.dynamic_slice wraps it there);
- a load reads the window; where a slice may have moved (a start not static and in bounds), a
  cond shifts it down by `shift` at the steps where it did, filling from past the end with JAX's
  uninitialized value (as the padding holds);
- a store whose start is static and in bounds writes its window in place (dynamic_update_slice,
  the window's own values where the mask is off); one that may run past the end is a scatter of
  single elements at the slice's own positions, a lane past the end or masked off sent past
  dimension 0 and dropped, so it writes only its in-bounds lanes (pallas_footprints.py counts a
  store's slice where it starts, a load's clamped window);
- `in_bounds` (the caller proved every slice inside its ref at every step) makes every access a
  plain slice, and `masks_true` (every mask proven true everywhere) drops the masks: the lowering
  discharges such a body for the steps where both hold and picks it per step (pallas.py).

Only a single indexer of unit-stride slices and integer indices whose slices fit their
dimensions is rewritten; anything else goes to JAX's rule (the runtime then keeps such a grid's
steps in order: they rewrite a whole array).
"""
from __future__ import annotations

import contextlib
import threading

import jax.numpy as jnp
from jax import lax


def _plan(ref_shape, transforms):
    """(starts, sizes, integer dims) of the single indexer in `transforms`, or None when this
    does not handle it."""
    from jax._src.state.indexing import NDIndexer, Slice

    transforms = list(transforms)
    if len(transforms) != 1 or not isinstance(transforms[0], NDIndexer):
        return None
    indices = transforms[0].indices
    if len(indices) != len(ref_shape):
        return None
    starts, sizes, integers = [], [], []
    for d, index in enumerate(indices):
        if isinstance(index, Slice):
            if not isinstance(index.size, int) or index.stride != 1 or index.size > ref_shape[d]:
                return None
            starts.append(index.start)
            sizes.append(index.size)
        elif not getattr(index, "shape", ()):
            starts.append(index)
            sizes.append(1)
            integers.append(d)
        else:
            return None
    return starts, sizes, integers


def _windows(ref_shape, starts, sizes, in_bounds):
    """Per dimension: the clamped window start, and the slice's shift inside it (None where the
    slice is static and in bounds, or `in_bounds` says every slice is: no shift)."""
    windows, shifts = [], []
    for d, (start, size) in enumerate(zip(starts, sizes)):
        if in_bounds and not isinstance(start, int):
            windows.append(jnp.asarray(start, jnp.int32))  # what dynamic_slice takes as it is
            shifts.append(None)
            continue
        if isinstance(start, int) and 0 <= start <= ref_shape[d] - size:
            windows.append(jnp.int32(start))
            shifts.append(None)
            continue
        start = jnp.asarray(start, jnp.int32)
        # a negative start counts from the end of JAX's padded ref (lax.dynamic_slice wraps it once)
        start = jnp.where(start < 0, start + ref_shape[d] + size, start)
        window = jnp.clip(start, 0, ref_shape[d] - size).astype(jnp.int32)
        windows.append(window)
        shifts.append(jnp.maximum(start - window, 0))
    return windows, shifts


def _shift_down(block, shifts, fill):
    """block[j + shift] at j (per dimension), `fill` past the block's end."""
    for d, shift in enumerate(shifts):
        if shift is None:
            continue
        padded = jnp.concatenate([block, jnp.full(block.shape, fill, block.dtype)], axis=d)
        block = lax.dynamic_slice_in_dim(padded, jnp.minimum(shift, block.shape[d]), block.shape[d], axis=d)
    return block


def _unshifted(shifts):
    """Whether no slice was moved back into bounds (a traced bool), or None when none can be."""
    moved = [shift for shift in shifts if shift is not None]
    if not moved:
        return None
    return jnp.all(jnp.stack(moved) == 0)


def _read(ref, windows, sizes, shifts, fill):
    """The slice's values (JAX's padded meaning): its window, shifted only where a slice ran past
    the end (a grid's last step), decided by a cond, so that the other steps read their window
    where it lies."""
    def read(array, shifted):
        block = lax.dynamic_slice(array, windows, sizes)
        return _shift_down(block, shifts, fill) if shifted else block

    unshifted = _unshifted(shifts)
    if unshifted is None:
        return read(ref, False)
    return lax.cond(unshifted, lambda array: read(array, False), lambda array: read(array, True), ref)


def _window_plan(ref, transforms, in_bounds):
    """(sizes, integer dims, windows, shifts, fill) of an access these rules take, or None."""
    from jax._src.pallas import primitives

    plan = _plan(ref.shape, transforms)
    if plan is None:
        return None
    starts, sizes, integers = plan
    windows, shifts = _windows(ref.shape, starts, sizes, in_bounds)
    return sizes, integers, windows, shifts, primitives.uninitialized_value((), ref.dtype)


def _scatter_lanes(ref, val, mask, windows, shifts, sizes, integers):
    """`ref` with the slice's lanes (where `mask` is true) set to `val` and nothing else written: a
    scatter of single elements at the slice's own positions (the window plus its shift), a lane
    past the end or masked off sent past the end of dimension 0, which the scatter drops. A
    masked store of a slice past the end thus writes only its in-bounds lanes, so its footprint
    is its slice, not its window."""
    rank = len(sizes)
    positions = []
    for d in range(rank):
        start = windows[d] if shifts[d] is None else windows[d] + shifts[d]
        positions.append(start + lax.broadcasted_iota(jnp.int32, tuple(sizes), d))
    if mask is not None:
        off = ~jnp.broadcast_to(jnp.expand_dims(mask, integers), tuple(sizes))
        positions[0] = jnp.where(off, ref.shape[0], positions[0])
    numbers = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=tuple(range(rank)),
                                          scatter_dims_to_operand_dims=tuple(range(rank)))
    return lax.scatter(ref, jnp.stack(positions, axis=-1), jnp.expand_dims(val, integers), numbers,
                       mode=lax.GatherScatterMode.FILL_OR_DROP)


def _load_rule(jax_rule, in_bounds, masks_true):
    def rule(ctx, *args_flat, args_tree, **params):
        ref, transforms, mask, other = args_tree.unflatten(args_flat)
        if masks_true:
            mask = None  # true at every lane: where(mask, out, other) is out
        plan = _window_plan(ref, transforms, in_bounds)
        if plan is None:
            return jax_rule(ctx, *args_flat, args_tree=args_tree, **params)
        sizes, integers, windows, shifts, fill = plan
        out = jnp.squeeze(_read(ref, windows, sizes, shifts, fill), integers)
        if mask is not None and other is not None:
            out = jnp.where(mask, out, other)
        return (None,) * len(ctx.in_avals), out
    return rule


def _swap_rule(jax_rule, in_bounds, masks_true):
    def rule(ctx, *args_flat, args_tree, **params):
        ref, transforms, val, mask = args_tree.unflatten(args_flat)
        if masks_true:
            mask = None  # true at every lane: the store writes val, the swap returns the old values
        plan = _window_plan(ref, transforms, in_bounds)
        if plan is None:
            return jax_rule(ctx, *args_flat, args_tree=args_tree, **params)
        sizes, integers, windows, shifts, fill = plan
        # the old values the swap returns: a read of their own, dead code where nothing uses them
        old = jnp.squeeze(_read(ref, windows, sizes, shifts, fill), integers)
        out = old if mask is None else jnp.where(mask, old, val)

        if _unshifted(shifts) is not None:  # a slice that may run past the end: its lanes, one by one
            updated = _scatter_lanes(ref, val, mask, windows, shifts, sizes, integers)
        else:  # the slice is its window: a read-modify-write where a mask is off
            window = lax.dynamic_slice(ref, windows, sizes)
            if mask is not None:
                val = jnp.where(mask, val, jnp.squeeze(window, integers))
            updated = lax.dynamic_update_slice(ref, jnp.expand_dims(val, integers), windows)
        return (updated,) + (None,) * (len(ctx.in_avals) - 1), out
    return rule


@contextlib.contextmanager
def masked_access_rules(in_bounds=False, masks_true=False):
    """Within: the state discharge of masked_load and masked_swap uses the rules above (JAX's
    own outside it, and for what they do not handle). `in_bounds`: the caller proved that every
    masked slice lies inside its ref at every step (pallas_footprints.access_boxes), so none needs
    the shift: each reads and writes its slice where it lies, with no cond. `masks_true`: the
    caller proved every mask true at every lane of every step: they are dropped."""
    from jax._src.pallas import primitives
    from jax._src.state import discharge

    with _SWAPPING:  # two threads lowering at once: each restores what it found, in turn
        rules = discharge._discharge_rules
        saved = {p: rules.get(p) for p in (primitives.load_p, primitives.swap_p)}
        rules[primitives.load_p] = _load_rule(saved[primitives.load_p], in_bounds, masks_true)
        rules[primitives.swap_p] = _swap_rule(saved[primitives.swap_p], in_bounds, masks_true)
        try:
            yield
        finally:
            for p, rule in saved.items():
                if rule is None:
                    rules.pop(p, None)
                else:
                    rules[p] = rule


_SWAPPING = threading.Lock()
