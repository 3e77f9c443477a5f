"""Plans and the plan-once, run-per-layer objects built on them.

A C plan fixes the layouts (shapes, dtypes, strides) of every tensor. plan() makes one for compact
tensors of the given shapes, so bad metadata fails there; a run whose tensors are laid out otherwise (a
query sliced out of a fused qkv, an HND cache) gets its own plan of the same batch, made at its first run
and kept, so later layers of that layout reuse it. Make those first runs outside a CUDA graph capture
(torch's warm-up runs do): planning allocates.
"""
import ctypes
from ctypes import byref, c_size_t, c_void_p

from . import _call
from . import _dlpack
from . import _types as T
from ._lib import Error, call
from .context import DeviceBuffer, _Resource


class Plan(_Resource):
    """An attnrt_plan_t; destroyed with close() or with its context."""

    _what = "plan"

    def __init__(self, ctx, handle):
        self._handle = handle
        self._register(ctx)

    @property
    def workspace_size(self):
        n = c_size_t()
        call("attnrt_plan_workspace_size", self.handle, byref(n))
        return n.value

    def _release_handle(self, handle):
        call("attnrt_plan_destroy", handle)


def make_plan(ctx, fn, *args):
    """Calls a C plan function `fn(ctx, *args, &plan)` and returns the Plan."""
    handle = c_void_p()
    call(fn, ctx.handle, *args, byref(handle))
    return Plan(ctx, handle.value)


class _Workspace:
    """Device memory for the plans' runs: given by the caller, or allocated (a torch tensor for torch inputs,
    attnrt_mem_alloc otherwise) and kept, growing only when a plan needs more."""

    def __init__(self, ctx, given=None):
        self.ctx = ctx
        self.given = given
        self.owned = None
        self.ptr, self.nbytes = None, 0
        if given is not None:
            self.ptr, self.nbytes = self._describe(given)

    def _describe(self, buf):
        if isinstance(buf, DeviceBuffer):
            return buf.ptr, buf.nbytes
        if _dlpack.is_torch(buf):
            return buf.data_ptr(), buf.numel() * buf.element_size()
        t, _ = self.ctx.tensor(buf)
        n = t.dtype.itemsize
        for d in range(t.ndim):
            n *= t.shape[d]
        return t.data, n

    def get(self, need, like):
        """(pointer, bytes) of at least `need` bytes."""
        if need <= self.nbytes:
            return self.ptr, self.nbytes
        if self.given is not None:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: the workspace given has %d bytes; the plan needs %d" % (
                self.nbytes, need))
        self.release()
        if _dlpack.is_torch(like):
            torch = _dlpack.torch_module()
            self.owned = torch.empty((need,), dtype=torch.uint8, device=like.device)
            self.ptr = self.owned.data_ptr()
        else:
            self.owned = DeviceBuffer(self.ctx, need)
            self.ptr = self.owned.ptr
        self.nbytes = need
        return self.ptr, self.nbytes

    def release(self):
        if isinstance(self.owned, DeviceBuffer):
            self.owned.close()
        if self.given is None:
            self.owned, self.ptr, self.nbytes = None, None, 0


class PlannedOp(_Resource):
    """Base of the plan-once, run-per-layer objects: its plans (one per tensor layout) and workspace."""

    _run_fn = None  # the C run function's name

    def __init__(self, ctx, workspace=None):
        self._plans = {}
        self._handle = True  # live until closed, by itself or with its context
        self._register(ctx)
        self._workspace = _Workspace(ctx, workspace)
        self._planned = False

    def _release_handle(self, _handle):
        self._drop_plans()
        self._workspace.release()

    def _drop_plans(self):
        plans, self._plans = self._plans, {}
        for plan in plans.values():
            plan.close()

    def _need_plan(self):
        if not self._planned:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: %s.run before plan()" % type(self).__name__)
        if self._handle is None:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: %s was closed" % type(self).__name__)

    def _new_batch(self, make):
        """Drops the last batch's plans and plans this one, for compact tensors (make(): args -> Plan)."""
        self._drop_plans()
        self._planned = False
        args = self._args(self._compact_tensors())
        self._plans[_call.signature(args)] = make(args)
        self._planned = True

    def _plan_for(self, args, stream):
        sig = _call.signature(args)
        plan = self._plans.get(sig)
        if plan is None:
            plan = self._replan(args, stream)
            self._plans[sig] = plan
        return plan

    def _run(self, c, args, like):
        """Runs `args` (of Call `c`) with the plan of its layout; `like` decides how a workspace is made."""
        plan = self._plan_for(args, c.stream_handle)
        ptr, nbytes = self._workspace.get(plan.workspace_size, like)
        call(self._run_fn, plan.handle, byref(args), ptr, nbytes, c.stream_handle)

    @property
    def workspace_size(self):
        """Workspace bytes the current plans need."""
        return max((p.workspace_size for p in self._plans.values()), default=0)

    # Subclasses: _compact_tensors() -> {name: Tensor pointer}, _args(tensors) -> args struct,
    # _replan(args, stream) -> Plan for the stored batch.


def compact(shape, dtype_):
    """A pointer to a row-major tensor descriptor without data (plans read only layouts)."""
    return ctypes.pointer(T.Tensor.make(shape, dtype_))


def cache_tensor(num_blocks, block_size, heads, dim, dtype_, layout):
    """A paged cache's descriptor: logical [num_blocks, block_size, heads, dim], stored NHD or HND."""
    if layout == "NHD":
        strides = [block_size * heads * dim, heads * dim, dim, 1]
    elif layout == "HND":
        strides = [block_size * heads * dim, dim, block_size * dim, 1]
    else:
        raise ValueError("attnrt: kv_layout must be 'NHD' or 'HND', not %r" % (layout,))
    return ctypes.pointer(T.Tensor.make([num_blocks, block_size, heads, dim], dtype_, strides=strides))

