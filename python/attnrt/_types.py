"""ctypes mirrors of abi/attnrt_types.h and attnrt.h: constants and every struct the API takes.

Each struct's `struct_size` is filled with ctypes.sizeof on construction (what the ATTNRT_*_INIT macros do
in C); tests/test_layout.py compares every size and offset with what a C compiler says.
"""
import ctypes
import enum
from ctypes import (POINTER, c_char, c_char_p, c_double, c_float, c_int32, c_int64, c_size_t, c_uint8, c_uint16,
                    c_uint32, c_uint64, c_void_p)

ABI_MAJOR = 2
ABI_MINOR = 0
NAME_MAX = 64
ATTR_KEY_MAX = 64
ATTR_VALUE_MAX = 192
MAX_DIMS = 6


class Status(enum.IntEnum):
    OK = 0
    ERR_INVALID_ARGUMENT = -1
    ERR_UNSUPPORTED = -2
    ERR_OUT_OF_MEMORY = -3
    ERR_NOT_FOUND = -4
    ERR_ABI_MISMATCH = -5
    ERR_PLUGIN = -6
    ERR_NO_DEVICE = -7
    ERR_DEVICE = -8
    ERR_BUSY = -9
    ERR_INTERNAL = -10


class DTypeCode(enum.IntEnum):
    INT = 0
    UINT = 1
    FLOAT = 2
    BFLOAT = 4
    BOOL = 6
    FLOAT8_E4M3FN = 10
    FLOAT8_E5M2 = 12


class DeviceType(enum.IntEnum):
    CPU = 1
    CUDA = 2
    ROCM = 10
    EXTDEV = 12
    ONEAPI = 14


class Op(enum.IntEnum):
    KV_WRITE = 1
    PAGED_ATTENTION = 2
    MERGE_STATES = 3
    CASCADE = 4
    MLA = 5
    LIGHTNING = 6
    GATED_DELTA = 7


class Feature(enum.IntFlag):
    CAUSAL = 1 << 0
    SLIDING_WINDOW = 1 << 1
    SOFTCAP = 1 << 2
    ALIBI = 1 << 3
    SINKS = 1 << 4
    LSE = 1 << 5
    KV_SCALE_BLOCK = 1 << 6
    LAYOUT_HND = 1 << 7
    SPARSE = 1 << 8


class LogLevel(enum.IntEnum):
    ERROR = 0
    WARN = 1
    INFO = 2
    DEBUG = 3


class FrontEnd(enum.IntEnum):
    DEFAULT = 0
    VLLM = 1
    COMPILED = 2


class LayerKind(enum.IntEnum):
    FULL = 0
    SLIDING = 1
    MLA_DENSE = 2
    MLA_SPARSE = 3


class ModelKind(enum.IntEnum):
    DECODER = 0
    POOLING = 1
    POOLING_QWEN3 = 2
    ENCODER_DECODER = 3


class _Struct(ctypes.Structure):
    """A versioned struct: struct_size is set to this mirror's size, other fields from keywords."""

    _c_name_ = None  # the C typedef, for the layout test

    def __init__(self, **fields):
        super().__init__()
        self.struct_size = ctypes.sizeof(self)
        for name, value in fields.items():
            setattr(self, name, value)


class DType(ctypes.Structure):
    """DLPack's DLDataType {code, bits, lanes}: the element type of a tensor."""

    _c_name_ = "attnrt_dtype_t"
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]

    def __init__(self, code=0, bits=0, lanes=1):
        super().__init__(int(code), int(bits), int(lanes))

    def __eq__(self, other):
        return isinstance(other, DType) and (self.code, self.bits, self.lanes) == (other.code, other.bits, other.lanes)

    def __hash__(self):
        return hash((self.code, self.bits, self.lanes))

    @property
    def itemsize(self):
        return self.bits // 8 * self.lanes

    @property
    def name(self):
        return _DTYPE_NAMES.get((self.code, self.bits, self.lanes), "{code %d, bits %d, lanes %d}" % (
            self.code, self.bits, self.lanes))

    def __repr__(self):
        return "attnrt.%s" % self.name

    def copy(self):
        return DType(self.code, self.bits, self.lanes)


float32 = DType(DTypeCode.FLOAT, 32)
float16 = DType(DTypeCode.FLOAT, 16)
bfloat16 = DType(DTypeCode.BFLOAT, 16)
float8_e4m3fn = DType(DTypeCode.FLOAT8_E4M3FN, 8)
float8_e5m2 = DType(DTypeCode.FLOAT8_E5M2, 8)
int32 = DType(DTypeCode.INT, 32)
int64 = DType(DTypeCode.INT, 64)
uint8 = DType(DTypeCode.UINT, 8)
bool_ = DType(DTypeCode.BOOL, 8)

# The library's own names (attnrt_dtype_name) first, then common aliases.
_DTYPE_NAMES = {(2, 32, 1): "f32", (2, 16, 1): "f16", (4, 16, 1): "bf16", (10, 8, 1): "fp8_e4m3",
                (12, 8, 1): "fp8_e5m2", (0, 32, 1): "i32", (0, 64, 1): "i64", (1, 8, 1): "u8", (6, 8, 1): "bool"}
_DTYPE_ALIASES = {
    "f32": float32, "float32": float32, "float": float32,
    "f16": float16, "float16": float16, "half": float16,
    "bf16": bfloat16, "bfloat16": bfloat16,
    "fp8_e4m3": float8_e4m3fn, "float8_e4m3fn": float8_e4m3fn, "e4m3": float8_e4m3fn,
    "fp8_e5m2": float8_e5m2, "float8_e5m2": float8_e5m2, "e5m2": float8_e5m2,
    "i32": int32, "int32": int32, "i64": int64, "int64": int64,
    "u8": uint8, "uint8": uint8, "bool": bool_,
}


def dtype(spec):
    """An attnrt DType from a DType, a name ("f16", "bfloat16", "fp8_e4m3"), a numpy dtype or a torch dtype."""
    if isinstance(spec, DType):
        return spec.copy()
    if isinstance(spec, str):
        key = spec
    else:
        # numpy dtypes and scalar types print as "float16"; torch dtypes as "torch.float16".
        name = getattr(spec, "name", None) if not isinstance(spec, type) else spec.__name__
        key = str(name if isinstance(name, str) else spec)
        if key.startswith("torch."):
            key = key[len("torch."):]
    found = _DTYPE_ALIASES.get(key.lower())
    if found is None:
        raise ValueError("attnrt: %r is not a dtype libattnrt knows (%s)" % (spec, ", ".join(sorted(set(
            _DTYPE_NAMES.values())))))
    return found.copy()


class Tensor(_Struct):
    """attnrt_tensor_t: data pointer, dtype, shape and strides (in elements)."""

    _c_name_ = "attnrt_tensor_t"
    _fields_ = [("struct_size", c_size_t), ("data", c_void_p), ("dtype", DType), ("ndim", c_int32),
                ("shape", c_int64 * MAX_DIMS), ("strides", c_int64 * MAX_DIMS)]

    @classmethod
    def make(cls, shape, dtype_, data=None, strides=None):
        """A descriptor over `data` (an address, or None in a plan), row-major unless strides are given."""
        t = cls()
        t.data = data
        t.dtype = dtype(dtype_)
        t.ndim = len(shape)
        if not 1 <= t.ndim <= MAX_DIMS:
            raise ValueError("attnrt: a tensor has 1 to %d dims, not %d" % (MAX_DIMS, t.ndim))
        if strides is None:
            strides, step = [], 1
            for extent in reversed(shape):
                strides.insert(0, step)
                step *= int(extent)
        for d in range(t.ndim):
            t.shape[d] = int(shape[d])
            t.strides[d] = int(strides[d])
        return t

    def layout(self):
        """(dtype, shape, strides) without the data pointer: what a plan's signature compares."""
        n = self.ndim
        return ((self.dtype.code, self.dtype.bits, self.dtype.lanes), tuple(self.shape[:n]), tuple(self.strides[:n]))

    def __repr__(self):
        n = self.ndim
        return "attnrt.Tensor(%s, shape=%s, strides=%s, data=0x%x)" % (
            self.dtype.name, list(self.shape[:n]), list(self.strides[:n]), self.data or 0)


TensorP = POINTER(Tensor)


class DeviceProperties(_Struct):
    _c_name_ = "attnrt_device_properties_t"
    _fields_ = [("struct_size", c_size_t), ("name", c_char * NAME_MAX), ("vendor", c_char * NAME_MAX),
                ("model", c_char * NAME_MAX), ("arch", c_char * NAME_MAX), ("driver", c_char * NAME_MAX),
                ("device_type", c_uint32), ("compute_units", c_uint32), ("memory_total", c_uint64),
                ("memory_free", c_uint64), ("attribute_count", c_uint32)]


class DeviceAttribute(_Struct):
    _c_name_ = "attnrt_device_attribute_t"
    _fields_ = [("struct_size", c_size_t), ("key", c_char * ATTR_KEY_MAX), ("value", c_char * ATTR_VALUE_MAX)]


class OpQuery(_Struct):
    _c_name_ = "attnrt_op_query_t"
    _fields_ = [("struct_size", c_size_t), ("op", c_uint32), ("q_dtype", DType), ("kv_dtype", DType),
                ("head_dim_qk", c_uint32), ("head_dim_v", c_uint32), ("block_size", c_uint32),
                ("num_q_heads", c_uint32), ("num_kv_heads", c_uint32), ("features", c_uint32)]


class KvWriteArgs(_Struct):
    _c_name_ = "attnrt_kv_write_args_t"
    _fields_ = [("struct_size", c_size_t), ("key", TensorP), ("value", TensorP), ("slot_mapping", TensorP),
                ("key_cache", TensorP), ("value_cache", TensorP), ("key_scale", TensorP), ("value_scale", TensorP),
                ("slot_mapping_host", POINTER(c_int64))]


class AttentionArgs(_Struct):
    _c_name_ = "attnrt_attention_args_t"
    _fields_ = [("struct_size", c_size_t), ("query", TensorP), ("key_cache", TensorP), ("value_cache", TensorP),
                ("block_table", TensorP), ("query_start_loc", TensorP), ("seq_lens", TensorP), ("out", TensorP),
                ("lse", TensorP), ("alibi_slopes", TensorP), ("sinks", TensorP), ("key_scale", TensorP),
                ("value_scale", TensorP), ("scale", c_float), ("softcap", c_float), ("causal", c_int32),
                ("sliding_window_left", c_int32), ("sliding_window_right", c_int32)]


class BatchHost(_Struct):
    _c_name_ = "attnrt_batch_host_t"
    _fields_ = [("struct_size", c_size_t), ("num_seqs", c_int32), ("query_start_loc", POINTER(c_int32)),
                ("seq_lens", POINTER(c_int32)), ("block_table", POINTER(c_int32)), ("block_table_stride", c_int64)]


class Capacity(_Struct):
    _c_name_ = "attnrt_capacity_t"
    _fields_ = [("struct_size", c_size_t), ("max_seqs", c_int32), ("max_blocks_per_seq", c_int32),
                ("max_tokens", c_int64), ("max_seq_len", c_int64)]


class MergeArgs(_Struct):
    _c_name_ = "attnrt_merge_args_t"
    _fields_ = [("struct_size", c_size_t), ("num_states", c_uint32), ("states", POINTER(TensorP)),
                ("lses", POINTER(TensorP)), ("out", TensorP), ("out_lse", TensorP), ("sinks", TensorP)]


class CascadeArgs(_Struct):
    _c_name_ = "attnrt_cascade_args_t"
    _fields_ = [("struct_size", c_size_t), ("suffix", POINTER(AttentionArgs)), ("prefix_block_table", TensorP),
                ("prefix_seq_lens", TensorP)]


class CascadeHost(_Struct):
    _c_name_ = "attnrt_cascade_host_t"
    _fields_ = [("struct_size", c_size_t), ("prefix", POINTER(BatchHost)), ("suffix", POINTER(BatchHost))]


class MlaArgs(_Struct):
    _c_name_ = "attnrt_mla_args_t"
    _fields_ = [("struct_size", c_size_t), ("query", TensorP), ("kv_cache", TensorP), ("block_table", TensorP),
                ("query_start_loc", TensorP), ("seq_lens", TensorP), ("out", TensorP), ("lse", TensorP),
                ("sinks", TensorP), ("kv_scale", TensorP), ("indices", TensorP), ("indices_host", POINTER(c_int32)),
                ("scale", c_float), ("causal", c_int32)]


class StateHost(_Struct):
    _c_name_ = "attnrt_state_host_t"
    _fields_ = [("struct_size", c_size_t), ("state_indices", POINTER(c_int32)),
                ("has_initial_state", POINTER(c_uint8)), ("spec_state_indices", POINTER(c_int32)),
                ("num_accepted", POINTER(c_int32)), ("num_spec", c_int32)]


class LightningArgs(_Struct):
    _c_name_ = "attnrt_lightning_args_t"
    _fields_ = [("struct_size", c_size_t), ("query", TensorP), ("key", TensorP), ("value", TensorP),
                ("out", TensorP), ("slopes", TensorP), ("state", TensorP), ("query_start_loc", TensorP),
                ("state_indices", TensorP), ("has_initial_state", TensorP)]


class GatedDeltaArgs(_Struct):
    _c_name_ = "attnrt_gated_delta_args_t"
    _fields_ = [("struct_size", c_size_t), ("query", TensorP), ("key", TensorP), ("value", TensorP), ("g", TensorP),
                ("beta", TensorP), ("out", TensorP), ("state", TensorP), ("query_start_loc", TensorP),
                ("state_indices", TensorP), ("has_initial_state", TensorP), ("spec_state_indices", TensorP),
                ("num_accepted", TensorP), ("scale", c_float), ("use_l2norm", c_int32)]


class AttentionConfig(_Struct):
    _c_name_ = "attnrt_attention_config_t"
    _fields_ = [("struct_size", c_size_t), ("front_end", c_uint32), ("layer_kind", c_uint32),
                ("attn_impl", c_char * 32), ("max_model_len", c_int64), ("block_size", c_int64),
                ("partition_len", c_int64), ("prefill_chunk", c_int64), ("sliding_window", c_int64),
                ("head_dim", c_uint32), ("has_sinks", c_uint32), ("kv_dtype", DType), ("model_kind", c_uint32)]


class AttentionSelection(_Struct):
    _c_name_ = "attnrt_attention_selection_t"
    _fields_ = [("struct_size", c_size_t), ("kernel", c_char * 32), ("block_size", c_int64),
                ("partition_len", c_int64), ("num_partitions", c_int64), ("prefill_chunk", c_int64),
                ("notes", c_char * 256)]


class OpStats(_Struct):
    _c_name_ = "attnrt_op_stats_t"
    _fields_ = [("struct_size", c_size_t), ("op", c_uint32), ("simulated", c_uint32), ("time_us", c_double),
                ("bytes_moved", c_uint64), ("flops", c_uint64), ("partitions", c_uint64), ("padded_rows", c_uint64),
                ("padding_tokens", c_uint64), ("launches", c_uint64)]


class PluginInfo(_Struct):
    _c_name_ = "attnrt_plugin_info_t"
    _fields_ = [("struct_size", c_size_t), ("path", c_char_p), ("name", c_char_p), ("version", c_char_p),
                ("abi_major", c_uint32), ("abi_minor", c_uint32), ("status", c_int32), ("reason", c_char_p),
                ("device_count", c_uint32)]


# Every mirrored struct, for the layout test.
STRUCTS = (DType, Tensor, DeviceProperties, DeviceAttribute, OpQuery, KvWriteArgs, AttentionArgs, BatchHost,
           Capacity, MergeArgs, CascadeArgs, CascadeHost, MlaArgs, StateHost, LightningArgs, GatedDeltaArgs,
           AttentionConfig, AttentionSelection, OpStats, PluginInfo)
