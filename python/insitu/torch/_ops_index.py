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


@_lower(aten.slice.Tensor)
def _slice(L, node, x, dim=0, start=None, end=None, step=1):
    dtype, dims = _meta(node)
    value = L.value(x)
    old = L.types[value][1]
    axis = dim % len(old)
    size = old[axis]
    start = 0 if start is None else (start + size if start < 0 else min(start, size))
    end = size if end is None else (end + size if end < 0 else min(end, size))
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


@_lower(aten.index_put.default)
def _index_put(L, node, x, indices, values, accumulate=False):
    """x[..., index, ...] = values (or +=) with one integer index tensor, of any rank, at one
    dimension: a scatter whose batch dimensions are the index's."""
    dtype, dims = _meta(node)
    tensors = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(tensors) != 1:
        raise Unsupported(f"index_put with {len(tensors)} index tensors: one is lowered")
    axis, index_node = tensors[0]
    index = L.value(index_node)
    index_dtype, index_dims = L.types[index]
    if index_dtype == torch.bool:
        raise Unsupported("index_put with a boolean mask")
    # torch wraps negative indices; a scatter would skip them.
    negative = L.emit("compare", torch.bool, index_dims,
                      f"compare({index}, {L.constant(0, index_dtype, index_dims)}), direction=LT")
    wrapped = L.emit("add", index_dtype, index_dims, f"add({index}, {L.constant(dims[axis], index_dtype, index_dims)})")
    index = L.emit("select", index_dtype, index_dims, f"select({negative}, {wrapped}, {index})")
    index = L.reshape(index, index_dims + (1,))
    rank = len(index_dims)
    update_dims = dims[:axis] + index_dims + dims[axis + 1:]
    updates = L.operand(values, dtype, update_dims)
    windows = ",".join(str(d) for d in list(range(axis)) + list(range(axis + rank, len(update_dims))))
    combine = L.region("add" if accumulate else "second", dtype)
    return L.emit("scatter", dtype, dims,
                  f"scatter({L.operand(x, dtype, dims)}, {index}, {updates}), update_window_dims={{{windows}}}, "
                  f"inserted_window_dims={{{axis}}}, scatter_dims_to_operand_dims={{{axis}}}, "
                  f"index_vector_dim={rank}, to_apply={combine}")


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
    indices = _full_indices(L, index_value, dim % rank, rank)
    every = ",".join(map(str, range(rank)))
    combine = L.region("add" if node.target is aten.scatter_add.default else "second", dtype)
    return L.emit("scatter", dtype, dims,
                  f"scatter({L.operand(x, dtype, dims)}, {indices}, {updates}), update_window_dims={{}}, "
                  f"inserted_window_dims={{{every}}}, scatter_dims_to_operand_dims={{{every}}}, "
                  f"index_vector_dim={rank}, to_apply={combine}")


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
    """base with src written over base[..., start:end, ...] (slice_scatter, step 1) or over
    base[..., index, ...] (select_scatter): a dynamic-update-slice at constant offsets."""
    dtype, dims = _meta(node)
    axis = dim % len(dims)
    if node.target is aten.select_scatter.default:
        start = bounds[0] % dims[axis]
        src_dims = tuple(1 if d == axis else size for d, size in enumerate(dims))
    else:
        start, end, step = (list(bounds) + [None, None, None])[:3]
        if step not in (None, 1):
            raise Unsupported(f"slice_scatter with step {step}")
        start = 0 if start is None else (start + dims[axis] if start < 0 else min(start, dims[axis]))
        end = dims[axis] if end is None else (end + dims[axis] if end < 0 else min(end, dims[axis]))
        src_dims = tuple(end - start if d == axis else size for d, size in enumerate(dims))
    update = L.reshape(L.convert(L.value(src), dtype), src_dims)
    offsets = [L.constant(start if d == axis else 0, torch.int32) for d in range(len(dims))]
    return L.emit("dynamic-update-slice", dtype, dims,
                  f"dynamic-update-slice({L.operand(base, dtype, dims)}, {update}, {', '.join(offsets)})")


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
