"""What every op call shares: the stream it runs on, its tensors (converted and kept alive until the call
returns), host metadata arrays, and outputs allocated like an input."""
import ctypes
from ctypes import POINTER

from . import _dlpack
from . import _types as T
from ._lib import Error
from .context import Stream

try:  # numpy is optional: host arrays fall back to ctypes arrays, outputs must then be given
    import numpy as _np
except ImportError:  # pragma: no cover (the tests need numpy)
    _np = None


def resolve_stream(ctx, stream, objs, torch_default=False):
    """The Stream a call runs on (None: the context's default stream).

    Explicit: an attnrt.Stream, a torch.cuda.Stream (or anything with .cuda_stream) or a native handle (int).
    Default, on a CUDA context: torch's current stream when a tensor is a torch CUDA tensor, or, with
    torch_default, whenever the program uses torch (plan updates have no tensors to look at)."""
    if stream is not None:
        if isinstance(stream, Stream):
            return stream
        native = getattr(stream, "cuda_stream", None)
        if native is not None:
            return ctx.wrap_stream(native)
        if isinstance(stream, int) and not isinstance(stream, bool):
            return ctx.wrap_stream(stream)
        raise TypeError("attnrt: stream must be an attnrt.Stream, a torch.cuda.Stream, a native handle or None, "
                        "not %s" % type(stream).__name__)
    torch = _dlpack.torch_module()
    if torch is None or not ctx.is_cuda:
        return None
    for obj in objs:
        if _dlpack.is_torch_cuda(obj):
            return ctx.wrap_stream(torch.cuda.current_stream(obj.device).cuda_stream)
    if torch_default and torch.cuda.is_available():
        return ctx.wrap_stream(torch.cuda.current_stream(ctx.ordinal).cuda_stream)
    return None


class Call:
    """The tensors of one C call, all kept alive by this object until it goes."""

    def __init__(self, ctx, stream=None, objs=(), torch_default=False):
        self.ctx = ctx
        self.stream = resolve_stream(ctx, stream, objs, torch_default)
        self._native = None
        self.keep = []

    @property
    def stream_handle(self):
        return self.stream.handle if self.stream is not None else None

    def _stream_native(self):
        if self._native is None and self.stream is not None:
            self._native = self.stream.native
        return self._native

    def tensor(self, obj, want=None, dtype=None, what="tensor"):
        """A pointer to the attnrt.Tensor over `obj` (None stays None).

        dtype: reinterpret the elements (same size) as this dtype. want: the dtype the op expects; an
        unsigned-integer tensor of its size (fp8 stored as uint8, bf16 as uint16) is read as it."""
        if obj is None:
            return None
        if isinstance(obj, T.Tensor):
            t = T.Tensor.from_buffer_copy(obj)
            if dtype is not None:
                _dlpack.retype(t, T.dtype(dtype), what)
        else:
            native = self._stream_native() if _dlpack.is_torch_cuda(obj) else None
            try:
                t, keep = _dlpack.from_dlpack(self.ctx.handle, obj, dtype, want, native)
            except Error as e:  # the library's message does not know the argument's name
                raise Error(e.status, "%s: %s" % (what, e.message)) from None
            self.keep.append(keep)
        self.keep.append(t)
        return ctypes.pointer(t)

    def tensors(self, **objs):
        """{name: tensor pointer} of the objects given (None left out); a value (obj, want) or
        (obj, want, dtype) passes tensor()'s want and dtype."""
        out = {}
        for name, spec in objs.items():
            obj, want, dtype = (spec + (None,))[:3] if isinstance(spec, tuple) else (spec, None, None)
            if obj is not None:
                out[name] = self.tensor(obj, want, dtype, what=name)
        return out


def signature(args):
    """The layouts of an args struct's tensors: a run may reuse a plan only when they are the same."""
    sig = []
    for name, ctype in type(args)._fields_:
        if ctype is T.TensorP:
            p = getattr(args, name)
            sig.append(p[0].layout() if p else None)
        elif getattr(ctype, "_type_", None) is not None and isinstance(ctype._type_, type) and issubclass(
                ctype._type_, T._Struct):  # a nested args struct (cascade's suffix)
            p = getattr(args, name)
            sig.append(signature(p[0]) if p else None)
    return tuple(sig)


# ---- host arrays ------------------------------------------------------------------------------------------

_NP_TYPES = {ctypes.c_int32: "int32", ctypes.c_int64: "int64", ctypes.c_uint8: "uint8"}


class HostArray:
    """A private, contiguous host copy of metadata: `ptr` for C, `shape`, and `values` (a flat list view)."""

    def __init__(self, x, ctype, what, ndim=1):
        if _dlpack.is_torch(x):
            x = x.detach().cpu()
            if _np is None:
                x = x.tolist()
        if _np is not None:
            a = _np.array(x, dtype=_NP_TYPES[ctype], copy=True, order="C")
            if a.ndim != ndim:
                raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: %s has %d dims, expected %d" % (what, a.ndim, ndim))
            self.shape = a.shape
            self._keep = a
            self.ptr = a.ctypes.data_as(POINTER(ctype))
            return
        rows = [list(r) for r in x] if ndim == 2 else [list(x)]
        if ndim == 2 and len({len(r) for r in rows}) > 1:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: %s has rows of different lengths" % what)
        flat = [int(v) for r in rows for v in r]
        self.shape = (len(rows), len(rows[0]) if rows else 0) if ndim == 2 else (len(flat),)
        self._keep = (ctype * max(len(flat), 1))(*flat)
        self.ptr = ctypes.cast(self._keep, POINTER(ctype))

    def __len__(self):
        return self.shape[0]

    def last(self):
        """The last element of a 1-D array."""
        return int(self.ptr[self.shape[0] - 1]) if self.shape[0] else 0


def host(x, ctype, what, ndim=1):
    return None if x is None else HostArray(x, ctype, what, ndim)


def batch_host(query_start_loc, seq_lens, block_table):
    """(attnrt.BatchHost, its arrays) from host metadata; block_table may be None (linear ops)."""
    qsl = host(query_start_loc, ctypes.c_int32, "query_start_loc")
    lens = host(seq_lens, ctypes.c_int32, "seq_lens")
    table = host(block_table, ctypes.c_int32, "block_table", 2)
    num_seqs = len(lens) if lens is not None else (len(qsl) - 1 if qsl is not None else 0)
    b = T.BatchHost(num_seqs=num_seqs)
    if qsl is not None:
        b.query_start_loc = qsl.ptr
    if lens is not None:
        b.seq_lens = lens.ptr
    if table is not None:
        b.block_table = table.ptr
        b.block_table_stride = table.shape[1]
    return b, (qsl, lens, table)


# ---- outputs ------------------------------------------------------------------------------------------------

_NP_STORAGE = {(2, 32): "float32", (2, 16): "float16", (4, 16): "uint16", (10, 8): "uint8", (12, 8): "uint8",
               (0, 32): "int32", (0, 64): "int64", (1, 8): "uint8", (6, 8): "bool"}
_TORCH_DTYPES = {(2, 32): "float32", (2, 16): "float16", (4, 16): "bfloat16", (10, 8): "float8_e4m3fn",
                 (12, 8): "float8_e5m2", (0, 32): "int32", (0, 64): "int64", (1, 8): "uint8", (6, 8): "bool"}


def empty_like(like, shape, dtype_=None):
    """A new array of `shape` and attnrt dtype `dtype_` (None: like's own), of the same kind and device as
    `like`: a torch tensor for torch inputs, else a numpy array (bf16 and fp8 stored as uint16 / uint8)."""
    if _dlpack.is_torch(like):
        torch = _dlpack.torch_module()
        dt = like.dtype if dtype_ is None else getattr(torch, _TORCH_DTYPES[(dtype_.code, dtype_.bits)])
        return torch.empty(tuple(shape), dtype=dt, device=like.device)
    if _np is None or not isinstance(like, _np.ndarray):
        raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: pass the output tensor (it can only be allocated like a "
                    "numpy array or a torch tensor)")
    dt = like.dtype if dtype_ is None else _NP_STORAGE[(dtype_.code, dtype_.bits)]
    return _np.empty(tuple(shape), dtype=dt)


def shape_of(obj):
    """A tensor-like's shape as a tuple (numpy, torch, attnrt.Tensor)."""
    if isinstance(obj, T.Tensor):
        return tuple(obj.shape[:obj.ndim])
    return tuple(int(d) for d in obj.shape)
