"""Lowerings of the indexing ops: slices, selects, concatenation, gathers, scatters, embeddings."""
from __future__ import annotations

import math

import torch

from ._lowering import _lower, aten
from ._types import Unsupported, _meta


@_lower(aten.split_with_sizes.default, aten.split.Tensor)
def _split(L, node, x, sizes, dim=0):
    value = L.value(x)
    dtype, dims = L.types[value]
    axis = dim % len(dims)
    if isinstance(sizes, int):
        sizes = [min(sizes, dims[axis] - s) for s in range(0, dims[axis], sizes)]
    pieces, start = [], 0
    for size in sizes:
        out = tuple(size if i == axis else d for i, d in enumerate(dims))
        bounds = ",".join(f"[{start}:{start + size}]" if i == axis else f"[0:{d}]" for i, d in enumerate(dims))
        pieces.append(L.emit("slice", dtype, out, f"slice({value}), slice={{{bounds}}}"))
        start += size
    return tuple(pieces)


def _slice_bounds(start, end, size):
    """torch's [start:end] on a dimension of `size`: negatives count from the end, both clamped."""
    start = 0 if start is None else min(max(start + size if start < 0 else start, 0), size)
    end = size if end is None else min(max(end + size if end < 0 else end, 0), size)
    return start, max(start, end)


@_lower(aten.slice.Tensor)
def _slice(L, node, x, dim=0, start=None, end=None, step=1):
    dtype, dims = _meta(node)
    value = L.value(x)
    old = L.types[value][1]
    axis = dim % len(old)
    start, end = _slice_bounds(start, end, old[axis])
    bounds = ",".join(f"[{start}:{end}:{step}]" if i == axis else f"[0:{d}]" for i, d in enumerate(old))
    return L.emit("slice", dtype, dims, f"slice({value}), slice={{{bounds}}}")


@_lower(aten.select.int)
def _select(L, node, x, dim, index):
    dtype, dims = _meta(node)
    value = L.value(x)
    old = L.types[value][1]
    axis = dim % len(old)
    index = index % old[axis]
    kept = tuple(1 if i == axis else d for i, d in enumerate(old))
    bounds = ",".join(f"[{index}:{index + 1}]" if i == axis else f"[0:{d}]" for i, d in enumerate(old))
    return L.reshape(L.emit("slice", dtype, kept, f"slice({value}), slice={{{bounds}}}"), dims)


@_lower(aten.cat.default)
def _cat(L, node, tensors, dim=0):
    dtype, dims = _meta(node)
    parts = [L.convert(L.value(t), dtype) for t in tensors]
    parts = [p for p in parts if L.types[p][1] != (0,)]  # torch lets an empty 1-D tensor join anything
    return L.emit("concatenate", dtype, dims, f"concatenate({', '.join(parts)}), dimensions={{{dim % len(dims)}}}")


def _wrapped_index(L, index_node, size, what):
    """An integer index tensor with torch's negative indices wrapped (a gather or scatter would
    clamp or skip them)."""
    index = L.value(index_node)
    index_dtype, index_dims = L.types[index]
    if index_dtype == torch.bool:
        raise Unsupported(f"{what} with a boolean mask (its result's shape depends on the values)")
    negative = L.emit("compare", torch.bool, index_dims,
                      f"compare({index}, {L.constant(0, index_dtype, index_dims)}), direction=LT")
    wrapped = L.emit("add", index_dtype, index_dims, f"add({index}, {L.constant(size, index_dtype, index_dims)})")
    return L.emit("select", index_dtype, index_dims, f"select({negative}, {wrapped}, {index})")


def _index_starts(L, indices, source, what):
    """For x[..., i0, i1, ...] with integer index tensors at adjacent dimensions of x (shape
    `source`): (the indexed dimensions, B the indices' broadcast shape, the [*B, n] start
    coordinates)."""
    axes = [d for d, i in enumerate(indices) if i is not None]
    if not axes or axes != list(range(axes[0], axes[0] + len(axes))):
        raise Unsupported(f"{what} with index tensors at dimensions {axes}: adjacent ones are lowered")
    wrapped = [L.convert(_wrapped_index(L, indices[axis], source[axis], what), torch.int64) for axis in axes]
    batch = tuple(torch.broadcast_shapes(*(L.types[i][1] for i in wrapped)))
    parts = [L.reshape(L.broadcast(i, batch), batch + (1,)) for i in wrapped]
    starts = parts[0] if len(parts) == 1 else L.emit(
        "concatenate", torch.int64, batch + (len(parts),), f"concatenate({', '.join(parts)}), dimensions={{{len(batch)}}}")
    return axes, batch, starts


@_lower(aten.index.Tensor)
def _index(L, node, x, indices):
    """x[..., i0, i1, ...]: a gather whose result is x's dimensions before the indexed ones, the
    indices' broadcast shape, then x's dimensions after them."""
    dtype, dims = _meta(node)
    value = L.value(x)
    source = L.types[value][1]
    axes, batch, starts = _index_starts(L, indices, source, "index")
    first = axes[0]
    offset = [d for d in range(len(dims)) if not first <= d < first + len(batch)]
    sizes = ",".join("1" if d in axes else str(n) for d, n in enumerate(source))
    indexed = ",".join(map(str, axes))
    return L.emit("gather", dtype, dims,
                  f"gather({value}, {starts}), offset_dims={{{','.join(map(str, offset))}}}, collapsed_slice_dims={{{indexed}}}, "
                  f"start_index_map={{{indexed}}}, index_vector_dim={len(batch)}, slice_sizes={{{sizes}}}")


@_lower(aten.index_put.default)
def _index_put(L, node, x, indices, values, accumulate=False):
    """x[..., i0, i1, ...] = values (or +=) with integer index tensors at adjacent dimensions: a
    scatter whose batch dimensions are the indices' broadcast shape, in place in x's buffer. (An
    index past the end, which eager torch refuses, is skipped by the scatter and clamped by the
    one-position form: insitu has no error path inside a program yet.)"""
    dtype, dims = _meta(node)
    axes, batch, starts = _index_starts(L, indices, dims, "index_put")
    first = axes[0]
    update_dims = dims[:first] + batch + dims[first + len(axes):]
    updates = L.operand(values, dtype, update_dims)
    if not accumulate and math.prod(batch) == 1:
        # one position (index_copy_ of a decode step's row): a dynamic-update-slice, which
        # slice-update-folding can move into the array a view of it was read from
        block = tuple(1 if d in axes else n for d, n in enumerate(dims))
        flat = L.reshape(starts, (len(axes),))
        offsets = []
        for d in range(len(dims)):
            if d not in axes:
                offsets.append(L.constant(0, torch.int64))
                continue
            k = axes.index(d)
            offsets.append(L.reshape(L.emit("slice", torch.int64, (1,), f"slice({flat}), slice={{[{k}:{k + 1}]}}"), ()))
        return L.emit("dynamic-update-slice", dtype, dims,
                      f"dynamic-update-slice({L.operand(x, dtype, dims)}, {L.reshape(updates, block)}, {', '.join(offsets)})")
    windows = ",".join(str(d) for d in range(len(update_dims)) if not first <= d < first + len(batch))
    indexed = ",".join(map(str, axes))
    combine = L.region("add" if accumulate else "second", dtype)
    return L.emit("scatter", dtype, dims,
                  f"scatter({L.operand(x, dtype, dims)}, {starts}, {updates}), update_window_dims={{{windows}}}, "
                  f"inserted_window_dims={{{indexed}}}, scatter_dims_to_operand_dims={{{indexed}}}, "
                  f"index_vector_dim={len(batch)}, to_apply={combine}")


def _full_indices(L, index, dim, rank):
    """For torch.gather/scatter along `dim`: [*index.shape, rank] coordinates, the index's own
    values at `dim` and each element's position elsewhere."""
    index_dtype, dims = L.types[index]
    parts = []
    for d in range(rank):
        if d == dim:
            part = index
        else:
            part = L.emit("iota", index_dtype, dims, f"iota(), iota_dimension={d}")
        parts.append(L.reshape(part, dims + (1,)))
    return L.emit("concatenate", index_dtype, dims + (rank,), f"concatenate({', '.join(parts)}), dimensions={{{len(dims)}}}")


@_lower(aten.gather.default)
def _gather(L, node, x, dim, index, sparse_grad=False):
    dtype, dims = _meta(node)
    value = L.value(x)
    rank = len(L.types[value][1])
    if rank == 0:
        raise Unsupported("gather of a scalar")
    indices = _full_indices(L, L.value(index), dim % rank, rank)
    every = ",".join(map(str, range(rank)))
    return L.emit("gather", dtype, dims,
                  f"gather({value}, {indices}), offset_dims={{}}, collapsed_slice_dims={{{every}}}, "
                  f"start_index_map={{{every}}}, index_vector_dim={rank}, slice_sizes={{{','.join(['1'] * rank)}}}")


@_lower(aten.scatter.value, aten.scatter.src, aten.scatter_add.default)
def _scatter(L, node, x, dim, index, source):
    dtype, dims = _meta(node)
    rank = len(dims)
    if rank == 0:
        raise Unsupported("scatter into a scalar")
    index_value = L.value(index)
    index_dims = L.types[index_value][1]
    if isinstance(source, torch.fx.Node):
        updates = L.convert(L.value(source), dtype)
        source_dims = L.types[updates][1]
        if source_dims != index_dims:  # torch reads src's leading index.shape block
            bounds = ",".join(f"[0:{d}]" for d in index_dims)
            updates = L.emit("slice", dtype, index_dims, f"slice({updates}), slice={{{bounds}}}")
    else:
        updates = L.constant(source, dtype, index_dims)
    d = dim % rank
    if (node.target is not aten.scatter_add.default and index_dims[d] == 1 and
            all(index_dims[k] == dims[k] for k in range(rank) if k != d)):
        return _scatter_one_per_line(L, L.operand(x, dtype, dims), index_value, updates, d, dtype, dims)
    indices = _full_indices(L, index_value, dim % rank, rank)
    every = ",".join(map(str, range(rank)))
    combine = L.region("add" if node.target is aten.scatter_add.default else "second", dtype)
    return L.emit("scatter", dtype, dims,
                  f"scatter({L.operand(x, dtype, dims)}, {indices}, {updates}), update_window_dims={{}}, "
                  f"inserted_window_dims={{{every}}}, scatter_dims_to_operand_dims={{{every}}}, "
                  f"index_vector_dim={rank}, to_apply={combine}")


def _scatter_one_per_line(L, base, index, updates, dim, dtype, dims):
    """x.scatter(dim, index, src) where index holds one position per line along `dim` (its size 1
    there, x's elsewhere: a one-hot, nll_loss's backward `zeros.scatter(1, target, -1)`):
    select(iota(dim) == index, src, x) (an index out of range matches nothing, as the scatter
    skips it). An elementwise select fuses with what reads it, where the scatter wrote a whole
    array (the transformer's [512, 8192] logits gradient: a 16 MB fill, then the scatter, then
    a pass reading it). An s64 index is compared in s32 when the dimension allows."""
    index_dtype = L.types[index][0]
    lines = tuple(n for k, n in enumerate(dims) if k != dim)
    along = tuple(k for k in range(len(dims)) if k != dim)

    def stretched(value):  # [.., 1 at dim, ..] -> dims, the same value along `dim`
        kind = L.types[value][0]
        flat = L.reshape(value, lines)
        mapping = ",".join(map(str, along))
        return L.emit("broadcast", kind, dims, f"broadcast({flat}), dimensions={{{mapping}}}")

    if index_dtype == torch.int64 and dims[dim] < 2**31 - 1:
        # compared in s32 (twice the lanes of s64 over the whole array): the index clamped to
        # [-1, size] first, so an index out of range still matches nothing
        low, high = L.constant(-1, index_dtype, L.types[index][1]), L.constant(dims[dim], index_dtype, L.types[index][1])
        index = L.convert(L.emit("clamp", index_dtype, L.types[index][1], f"clamp({low}, {index}, {high})"), torch.int32)
        index_dtype = torch.int32
    position = L.emit("iota", index_dtype, dims, f"iota(), iota_dimension={dim}")
    hit = L.emit("compare", torch.bool, dims, f"compare({position}, {stretched(index)}), direction=EQ")
    return L.emit("select", dtype, dims, f"select({hit}, {stretched(updates)}, {base})")


@_lower(aten.embedding_dense_backward.default)
def _embedding_backward(L, node, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    if scale_grad_by_freq:
        raise Unsupported("embedding backward with scale_grad_by_freq=True")
    dtype, dims = _meta(node)
    width = dims[1]
    index = L.value(indices)
    index_dtype, index_dims = L.types[index]
    count = math.prod(index_dims)
    rows = L.reshape(L.convert(L.value(grad), dtype), (count, width))
    index = L.reshape(index, (count,))
    if padding_idx is not None and padding_idx >= 0:  # the padding row gets no gradient
        keep = L.emit("compare", torch.bool, (count,),
                      f"compare({index}, {L.constant(padding_idx, index_dtype, (count,))}), direction=NE")
        rows = L.emit("select", dtype, (count, width),
                      f"select({L.broadcast(L.reshape(keep, (count, 1)), (count, width))}, {rows}, "
                      f"{L.constant(0, dtype, (count, width))})")
    return L.emit("scatter", dtype, dims,
                  f"scatter({L.constant(0, dtype, dims)}, {L.reshape(index, (count, 1))}, {rows}), "
                  f"update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, "
                  f"index_vector_dim=1, to_apply={L.region('add', dtype)}")


@_lower(aten.slice_scatter.default, aten.select_scatter.default)
def _slice_scatter(L, node, base, src, dim=0, *bounds):
    """base with src written over base[..., start:end:step, ...] (slice_scatter) or over
    base[..., index, ...] (select_scatter): a dynamic-update-slice at constant offsets, in place
    in base's buffer; a step above 1 is src spread by interior padding, selected over base."""
    dtype, dims = _meta(node)
    axis = dim % len(dims)
    step = 1
    if node.target is aten.select_scatter.default:
        start = bounds[0] % dims[axis]
        count = 1
    else:
        start, end, step = (list(bounds) + [None, None, None])[:3]
        step = 1 if step is None else step
        start, end = _slice_bounds(start, end, dims[axis])
        count = -(-(end - start) // step)
    src_dims = tuple(count if d == axis else size for d, size in enumerate(dims))
    update = L.reshape(L.convert(L.value(src), dtype), src_dims)
    if count == 0:
        return L.operand(base, dtype, dims)
    if step == 1:
        offsets = [L.constant(start if d == axis else 0, torch.int32) for d in range(len(dims))]
        return L.emit("dynamic-update-slice", dtype, dims,
                      f"dynamic-update-slice({L.operand(base, dtype, dims)}, {update}, {', '.join(offsets)})")
    last = start + (count - 1) * step
    padding = "x".join(f"{start}_{dims[axis] - last - 1}_{step - 1}" if d == axis else "0_0_0" for d in range(len(dims)))
    spread = L.emit("pad", dtype, dims, f"pad({update}, {L.constant(0, dtype)}), padding={padding}")
    position = L.emit("iota", torch.int32, dims, f"iota(), iota_dimension={axis}")
    offset = L.emit("subtract", torch.int32, dims, f"subtract({position}, {L.constant(start, torch.int32, dims)})")
    phase = L.emit("remainder", torch.int32, dims, f"remainder({offset}, {L.constant(step, torch.int32, dims)})")
    on_step = L.emit("compare", torch.bool, dims, f"compare({phase}, {L.constant(0, torch.int32, dims)}), direction=EQ")
    after = L.emit("compare", torch.bool, dims, f"compare({position}, {L.constant(start, torch.int32, dims)}), direction=GE")
    before = L.emit("compare", torch.bool, dims, f"compare({position}, {L.constant(last, torch.int32, dims)}), direction=LE")
    written = L.emit("and", torch.bool, dims,
                     f"and({on_step}, {L.emit('and', torch.bool, dims, f'and({after}, {before})')})")
    return L.emit("select", dtype, dims, f"select({written}, {spread}, {L.operand(base, dtype, dims)})")


@_lower(aten.embedding.default)
def _embedding(L, node, weight, indices, *rest):
    dtype, dims = _meta(node)
    table = L.value(weight)
    rows, width = L.types[table][1]
    index = L.value(indices)
    index_dims = L.types[index][1]
    index = L.reshape(index, index_dims + (1,))
    return L.emit("gather", dtype, dims,
                  f"gather({table}, {index}), offset_dims={{{len(index_dims)}}}, collapsed_slice_dims={{0}}, "
                  f"start_index_map={{0}}, index_vector_dim={len(index_dims)}, slice_sizes={{1,{width}}}")
