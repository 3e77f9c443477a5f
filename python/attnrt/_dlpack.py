"""Tensors in through DLPack: any object with __dlpack__ (numpy >= 1.22, torch, cupy, jax) becomes an
attnrt_tensor_t by attnrt_tensor_from_dlpack, which checks it against the context's device.

The capsule is only borrowed: it is neither renamed nor consumed, so its producer's destructor frees it
when the last reference goes. Callers keep the returned `keep` tuple (capsule and source) alive until
the C call that reads the tensor has returned.
"""
import ctypes
import sys
from ctypes import POINTER, c_int32, c_int64, c_uint32, c_uint64, c_void_p

from . import _lib
from . import _types as T


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", c_void_p), ("deleter", c_void_p), ("flags", c_uint64),
                ("dl_tensor", DLTensor)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]

# DLPack stream numbers for CUDA: 0 is ambiguous and refused by the protocol; 1 is the legacy default stream.
_CUDA_LEGACY_STREAM = 1


def torch_module():
    """torch if the program imported it (attnrt never imports torch itself), else None."""
    return sys.modules.get("torch")


def is_torch(obj):
    torch = torch_module()
    return torch is not None and isinstance(obj, torch.Tensor)


def is_torch_cuda(obj):
    return is_torch(obj) and obj.is_cuda


def _torch_fp8(torch, obj):
    """For torch fp8 tensors: the attnrt dtype to restore after exporting their bytes as uint8."""
    for attr, dt in (("float8_e4m3fn", T.float8_e4m3fn), ("float8_e5m2", T.float8_e5m2)):
        if getattr(torch, attr, None) is not None and obj.dtype == getattr(torch, attr):
            return dt
    return None


def capsule_of(obj, stream_native=None):
    """(capsule, source, dtype to set afterwards or None) for a DLPack producer.

    Torch CUDA tensors are exported for `stream_native` (the native stream the op will run on), so torch
    orders its pending work on the tensor before it, as the DLPack protocol says."""
    restore = None
    if is_torch(obj):
        torch = torch_module()
        if obj.requires_grad:
            obj = obj.detach()
        restore = _torch_fp8(torch, obj)
        if restore is not None:
            obj = obj.view(torch.uint8)  # DLPack 0.x producers have no fp8 codes: export the bytes
        if obj.is_cuda:
            stream = _CUDA_LEGACY_STREAM if not stream_native else int(stream_native)
            return obj.__dlpack__(stream=stream), obj, restore
        return obj.__dlpack__(), obj, restore
    producer = getattr(obj, "__dlpack__", None)
    if producer is None:
        raise TypeError("attnrt: expected a tensor (an object with __dlpack__, such as a numpy array or a torch "
                        "tensor, or an attnrt.Tensor), got %s" % type(obj).__name__)
    return producer(), obj, restore


def dltensor_address(capsule):
    """The address of the DLTensor inside a DLPack capsule (legacy or versioned), borrowed."""
    name = _get_name(capsule)
    if name == b"dltensor":
        managed = _get_pointer(capsule, name)
        return managed + DLManagedTensor.dl_tensor.offset
    if name == b"dltensor_versioned":
        managed = _get_pointer(capsule, name)
        return managed + DLManagedTensorVersioned.dl_tensor.offset
    raise TypeError("attnrt: __dlpack__ returned a capsule named %r, not 'dltensor' (was it consumed already?)" % (
        name,))


def from_dlpack(ctx_handle, obj, dtype=None, want=None, stream_native=None):
    """(attnrt.Tensor, keep): the tensor over `obj`'s memory and what must stay alive while it is used.

    dtype: read the elements as this dtype (same size), e.g. fp8 caches stored as uint8. want: the dtype
    the op expects; unsigned-integer storage of its size (fp8 in uint8, bf16 in uint16) is read as it.
    Either way the producer's DLTensor is left alone: a copy with the new dtype goes to the library."""
    capsule, source, restore = capsule_of(obj, stream_native)
    address = dltensor_address(capsule)
    dl = DLTensor.from_address(address)
    new = T.dtype(dtype) if dtype is not None else restore
    if new is None and want is not None and dl.dtype.code == T.DTypeCode.UINT and dl.dtype.lanes == 1 \
            and dl.dtype.bits == want.bits and want.code not in (T.DTypeCode.INT, T.DTypeCode.UINT):
        new = want
    local = None
    if new is not None:
        if new.bits * new.lanes != dl.dtype.bits * dl.dtype.lanes:
            raise _lib.Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: a tensor of %d-bit elements cannot be read as "
                             "%s (element sizes differ)" % (dl.dtype.bits * dl.dtype.lanes, new.name))
        local = DLTensor.from_buffer_copy(dl)
        local.dtype = DLDataType(new.code, new.bits, new.lanes)
        address = ctypes.addressof(local)
    t = T.Tensor()
    _lib.call("attnrt_tensor_from_dlpack", ctx_handle, address, ctypes.byref(t))
    return t, (capsule, source, local)


def retype(t, want, what):
    """Sets t's dtype to `want`, which must have the same element size."""
    if want.bits * want.lanes != t.dtype.bits * t.dtype.lanes:
        raise _lib.Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: %s of dtype %s cannot be read as %s (element sizes "
                         "differ: %d and %d bits)" % (what, t.dtype.name, want.name, t.dtype.bits, want.bits))
    t.dtype = want
