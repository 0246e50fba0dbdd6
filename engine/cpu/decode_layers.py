"""Every layer of a decode step in one call (decode_layers.c): for steps of up to Q4_ROWS decode
rows on a model whose projections all hold the engine's 4-bit codes."""

import ctypes

import torch

from engine.attention import AttentionMetadata
from engine.cpu.build import library
from engine.cpu.quantized import Q4Struct, Q4Weight


class LayerStruct(ctypes.Structure):
    _fields_ = [
        ("attn_norm", ctypes.c_void_p),
        ("mlp_norm", ctypes.c_void_p),
        ("qkv", Q4Struct),
        ("o", Q4Struct),
        ("gate_up", Q4Struct),
        ("down", Q4Struct),
    ]


def layer_structs(layers: list) -> ctypes.Array | None:
    """The C view of model.LayerWeights, or None where a projection is not 4-bit codes or a
    norm is not float32 (decode then goes op by op)."""
    structs = []
    for layer in layers:
        weights = [layer.qkv.weight, layer.o.weight, layer.gate_up.weight, layer.down.weight]
        norms = [layer.attn_norm, layer.mlp_norm]
        if not all(isinstance(w, Q4Weight) for w in weights) or any(n.dtype != torch.float32 for n in norms):
            return None
        structs.append(LayerStruct(norms[0].data_ptr(), norms[1].data_ptr(), *(w.struct for w in weights)))
    return (LayerStruct * len(structs))(*structs)


def decode_layers(
    layers: ctypes.Array,
    x: torch.Tensor,  # (T, hidden) float32, updated in place
    heads: tuple[int, int, int],  # query heads, KV heads, head dim
    eps: float,
    cos: torch.Tensor,  # (T, D) rows of the positions
    sin: torch.Tensor,  # (T, D), with rotate_half's sign
    kv_cache: tuple[torch.Tensor, torch.Tensor],  # each (layers, blocks, block_size, KVH, D), float32 or bfloat16
    meta: AttentionMetadata,
    scale: float,
) -> torch.Tensor:
    lib = library()
    assert not isinstance(lib, str), lib
    assert meta.decode_block_tables is not None and meta.decode_lens is not None
    k_cache, v_cache = kv_cache
    tables = meta.decode_block_tables
    h, kvh, d = heads
    cos, sin = cos.contiguous(), sin.contiguous()  # held here: a copy must outlive the call
    lib.decode_layers(
        len(layers),
        layers,
        x.shape[0],
        x.data_ptr(),
        h,
        kvh,
        d,
        eps,
        cos.data_ptr(),
        sin.data_ptr(),
        k_cache.data_ptr(),
        v_cache.data_ptr(),
        int(k_cache.dtype == torch.bfloat16),
        k_cache.stride(0),
        k_cache.shape[2],
        meta.slot_mapping.data_ptr(),
        tables.data_ptr(),
        tables.shape[1],
        meta.decode_lens.data_ptr(),
        scale,
    )
    return x
