"""attnrt: Python bindings of libattnrt (pure Python over ctypes).

Tensors come in through DLPack (numpy arrays, torch tensors, ...); torch CUDA tensors run on torch's
current stream. Every failed call raises attnrt.Error with the library's message. The library is
ATTNRT_LIBRARY (a full path to libattnrt.so) when set, else libattnrt.so.0 through the dynamic loader;
it is loaded at first use.

    import attnrt
    with attnrt.open("cpu:0") as ctx:
        attn = attnrt.PagedAttention(ctx)
        attn.plan(query_start_loc, seq_lens, block_table, num_q_heads=8, num_kv_heads=2, head_dim=64,
                  block_size=16, num_blocks=k_cache.shape[0], causal=True)
        out = attn.run(q, k_cache, v_cache, block_table=block_table, query_start_loc=query_start_loc,
                       seq_lens=seq_lens)
"""
from ._lib import Error, has as has_symbol, library_path
from ._types import (ABI_MAJOR, ABI_MINOR, MAX_DIMS, DeviceType, DType, DTypeCode, Feature, FrontEnd, LayerKind,
                     LogLevel, ModelKind, Op, Status, Tensor, bfloat16, bool_, dtype, float8_e4m3fn, float8_e5m2,
                     float16, float32, int32, int64, uint8)
from .context import (Context, DeviceBuffer, DeviceInfo, Event, PluginInfo, Stream, abi_version, default_device,
                      device_info, devices, init, open, plugins, set_log_callback, set_log_level, status_name,
                      version, version_string)
from .attention import Cascade, PagedAttention, kv_write, merge_states
from .mla import MLA
from .linear import GatedDelta, Lightning
from .state import StatePool
from ._planned import Plan

__version__ = "0.2.0"

__all__ = [
    "ABI_MAJOR", "ABI_MINOR", "MAX_DIMS", "Cascade", "Context", "DType", "DTypeCode", "DeviceBuffer", "DeviceInfo",
    "DeviceType", "Error", "Event", "Feature", "FrontEnd", "GatedDelta", "LayerKind", "Lightning", "LogLevel", "MLA",
    "ModelKind", "Op", "PagedAttention", "Plan", "PluginInfo", "StatePool", "Status", "Stream", "Tensor",
    "abi_version", "bfloat16", "bool_", "default_device", "device_info", "devices", "dtype", "float16", "float32",
    "float8_e4m3fn", "float8_e5m2", "has_symbol", "init", "int32", "int64", "kv_write", "library_path", "merge_states",
    "open", "plugins", "set_log_callback", "set_log_level", "status_name", "uint8", "version", "version_string",
]
