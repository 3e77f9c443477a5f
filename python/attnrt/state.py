"""State-slot pools: per-request recurrent state (lightning attention, gated delta) the runtime owns."""
import ctypes
from ctypes import byref, c_int32, c_int64

from . import _types as T
from ._lib import Error, call
from .context import _Resource, _stream_handle


class StatePool(_Resource):
    """num_slots states of shape slot_shape (e.g. [H, Dk, Dv]) in device memory, all free at first.

        pool = attnrt.StatePool(ctx, [heads, dk, dv], num_slots=64)
        slot = pool.alloc(); pool.zero(slot); ...; pool.free(slot)"""

    _what = "state pool"

    def __init__(self, ctx, slot_shape, num_slots, dtype="f32"):
        shape = (c_int64 * len(slot_shape))(*[int(d) for d in slot_shape])
        handle = ctypes.c_void_p()
        call("attnrt_state_pool_create", ctx.handle, T.dtype(dtype), len(slot_shape), shape, int(num_slots),
             byref(handle))
        self._handle = handle.value
        self.slot_shape = tuple(int(d) for d in slot_shape)
        self._register(ctx)

    def _release_handle(self, handle):
        call("attnrt_state_pool_destroy", handle)

    def tensor(self):
        """The pool as an attnrt.Tensor [num_slots, *slot_shape]: an op's `state`."""
        t = T.Tensor()
        call("attnrt_state_pool_tensor", self.handle, byref(t))
        return t

    def usage(self):
        """(num_slots, num_free)."""
        total, free = c_int32(), c_int32()
        call("attnrt_state_pool_usage", self.handle, byref(total), byref(free))
        return total.value, free.value

    @property
    def num_slots(self):
        return self.usage()[0]

    def alloc(self):
        """The lowest free slot id (its contents are undefined until written)."""
        slot = c_int32()
        call("attnrt_state_slot_alloc", self.handle, byref(slot))
        return slot.value

    def free(self, slot):
        call("attnrt_state_slot_free", self.handle, int(slot))

    def zero(self, slot, stream=None):
        call("attnrt_state_slot_zero", self.handle, int(slot), _stream_handle(stream))

    def copy(self, src, dst, stream=None):
        """dst = src (prefix caching, speculative decoding, beam forks)."""
        call("attnrt_state_slot_copy", self.handle, int(src), int(dst), _stream_handle(stream))

    def _slot_span(self, slot):
        t = self.tensor()
        if not 0 <= int(slot) < t.shape[0]:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: slot %d is outside the pool's %d slots" % (
                slot, t.shape[0]))
        nbytes = t.dtype.itemsize
        for d in range(1, t.ndim):
            nbytes *= t.shape[d]
        return t.data + int(slot) * t.strides[0] * t.dtype.itemsize, nbytes, t.dtype

    def read(self, slot):
        """A host copy (numpy array of slot_shape) of one slot, after the context's default stream's work."""
        import numpy as np
        addr, nbytes, dt = self._slot_span(slot)
        if dt != T.float32:
            raise Error(T.Status.ERR_UNSUPPORTED, "attnrt: StatePool.read reads f32 pools, not %s" % dt.name)
        out = np.empty(self.slot_shape, dtype=np.float32)
        call("attnrt_mem_copy_to_host", self.ctx.handle, out.ctypes.data, addr, nbytes, None)
        return out

    def write(self, slot, values):
        """Fills one slot from a host array of slot_shape (float32), on the context's default stream."""
        import numpy as np
        addr, nbytes, dt = self._slot_span(slot)
        if dt != T.float32:
            raise Error(T.Status.ERR_UNSUPPORTED, "attnrt: StatePool.write writes f32 pools, not %s" % dt.name)
        src = np.ascontiguousarray(values, dtype=np.float32)
        if src.shape != self.slot_shape:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: StatePool.write: values of shape %s, the slot is %s" % (
                src.shape, self.slot_shape))
        call("attnrt_mem_copy_to_device", self.ctx.handle, addr, src.ctypes.data, nbytes, None)
