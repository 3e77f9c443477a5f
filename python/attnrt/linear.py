"""Lightning (linear) attention and the gated delta rule over state-slot pools."""
import ctypes
from ctypes import byref
from types import SimpleNamespace

from . import _call
from . import _types as T
from ._call import Call, empty_like, shape_of
from ._planned import PlannedOp, compact, make_plan


class _LinearOp(PlannedOp):
    """Shared by Lightning and GatedDelta: the host batch and state metadata, the pool, outputs."""

    _plan_fn = None

    def _plan_states(self, query_start_loc, state_indices, has_initial_state, pool, spec_state_indices=None,
                     num_accepted=None):
        batch, arrays = _call.batch_host(query_start_loc, None, None)
        idx = _call.host(state_indices, ctypes.c_int32, "state_indices")
        init = _call.host(has_initial_state, ctypes.c_uint8, "has_initial_state")
        spec = _call.host(spec_state_indices, ctypes.c_int32, "spec_state_indices", 2)
        accepted = _call.host(num_accepted, ctypes.c_int32, "num_accepted")
        states = T.StateHost(num_spec=spec.shape[1] - 1 if spec is not None else 0)
        for name, arr in (("state_indices", idx), ("has_initial_state", init), ("spec_state_indices", spec),
                          ("num_accepted", accepted)):
            if arr is not None:
                setattr(states, name, arr.ptr)
        self._host = (batch, states, pool)
        self._host_keep = (arrays, idx, init, spec, accepted)
        self._pool = pool
        self._dims = (arrays[0].last(), len(arrays[0]) - 1, states.num_spec if spec is not None else None)

    def _replan(self, args, stream):
        batch, states, pool = self._host
        return make_plan(self.ctx, self._plan_fn, byref(args), byref(batch), byref(states), pool.handle)

    def _pool_tensor(self, c, pool):
        return c.tensor((pool or self._pool).tensor(), what="state")


class Lightning(_LinearOp):
    """Lightning attention with per-head decay exp(-slope_h) and per-request state slots.

        pool = attnrt.StatePool(ctx, [H, Dk, Dv], num_slots=64)
        op = attnrt.Lightning(ctx)
        op.plan(qsl, state_indices, has_initial_state, pool=pool, num_heads=H, head_dim_k=Dk, head_dim_v=Dv)
        out = op.run(q, k, v, slopes, query_start_loc=qsl_d, state_indices=idx_d, has_initial_state=init_d)"""

    _plan_fn = "attnrt_lightning_plan"
    _run_fn = "attnrt_lightning_run"

    def plan(self, query_start_loc, state_indices, has_initial_state, *, pool, num_heads, head_dim_k, head_dim_v=None,
             q_dtype="f32"):
        """Host metadata: query_start_loc [B + 1], state_indices [B] (-1: padding), has_initial_state [B];
        every index must be a slot allocated in `pool` (runs may pass another pool of the same layout)."""
        self._opts = SimpleNamespace(H=int(num_heads), Dk=int(head_dim_k),
                                     Dv=int(head_dim_k if head_dim_v is None else head_dim_v), q_dtype=T.dtype(q_dtype))
        self._plan_states(query_start_loc, state_indices, has_initial_state, pool)
        self._new_batch(lambda args: self._replan(args, None))

    def _compact_tensors(self):
        o = self._opts
        tokens, seqs, _ = self._dims
        return dict(query=compact([tokens, o.H, o.Dk], o.q_dtype), key=compact([tokens, o.H, o.Dk], o.q_dtype),
                    value=compact([tokens, o.H, o.Dv], o.q_dtype), out=compact([tokens, o.H, o.Dv], o.q_dtype),
                    slopes=compact([o.H], T.float32), state=ctypes.pointer(self._pool.tensor()),
                    query_start_loc=compact([seqs + 1], T.int32), state_indices=compact([seqs], T.int32),
                    has_initial_state=compact([seqs], T.uint8))

    def _args(self, tensors):
        return T.LightningArgs(**tensors)

    def run(self, q, k, v, slopes, *, query_start_loc, state_indices, has_initial_state, out=None, pool=None,
            stream=None):
        """q, k [T, H, Dk], v [T, H, Dv], slopes [H] f32 and the device metadata; reads and writes the slots
        of `pool` (default: the planned pool). Returns out [T, H, Dv]."""
        self._need_plan()
        o = self._opts
        if out is None:
            out = empty_like(q, (shape_of(q)[0], o.H, o.Dv), o.q_dtype)
        c = Call(self.ctx, stream, (q, k, v, out))
        t = c.tensors(query=(q, o.q_dtype), key=(k, o.q_dtype), value=(v, o.q_dtype), out=(out, o.q_dtype),
                      slopes=slopes, query_start_loc=query_start_loc, state_indices=state_indices,
                      has_initial_state=has_initial_state)
        t["state"] = self._pool_tensor(c, pool)
        self._run(c, self._args(t), q)
        return out


class GatedDelta(_LinearOp):
    """The gated delta rule (Qwen3-Next / Kimi-style GDN) with per-request state slots, speculative decoding
    included (spec_state_indices / num_accepted)."""

    _plan_fn = "attnrt_gated_delta_plan"
    _run_fn = "attnrt_gated_delta_run"

    def plan(self, query_start_loc, state_indices, has_initial_state, *, pool, num_heads, head_dim_k, head_dim_v=None,
             num_v_heads=None, q_dtype="f32", gate_dtype="f32", scale=0.0, use_l2norm=False, spec_state_indices=None,
             num_accepted=None):
        """Host metadata as Lightning.plan; num_v_heads (HV, a multiple of num_heads; default num_heads);
        g and beta of gate_dtype (f32 or q_dtype); scale 0: Dk^-1/2; spec_state_indices [B, num_spec + 1] and
        num_accepted [B] for speculative decoding."""
        self._opts = SimpleNamespace(H=int(num_heads), HV=int(num_v_heads or num_heads), Dk=int(head_dim_k),
                                     Dv=int(head_dim_k if head_dim_v is None else head_dim_v),
                                     q_dtype=T.dtype(q_dtype), gate_dtype=T.dtype(gate_dtype), scale=float(scale),
                                     use_l2norm=bool(use_l2norm))
        self._plan_states(query_start_loc, state_indices, has_initial_state, pool, spec_state_indices, num_accepted)
        self._new_batch(lambda args: self._replan(args, None))

    def _compact_tensors(self):
        o = self._opts
        tokens, seqs, num_spec = self._dims
        t = dict(query=compact([tokens, o.H, o.Dk], o.q_dtype), key=compact([tokens, o.H, o.Dk], o.q_dtype),
                 value=compact([tokens, o.HV, o.Dv], o.q_dtype), g=compact([tokens, o.HV], o.gate_dtype),
                 beta=compact([tokens, o.HV], o.gate_dtype), out=compact([tokens, o.HV, o.Dv], o.q_dtype),
                 state=ctypes.pointer(self._pool.tensor()), query_start_loc=compact([seqs + 1], T.int32),
                 state_indices=compact([seqs], T.int32), has_initial_state=compact([seqs], T.uint8))
        if num_spec is not None:
            t["spec_state_indices"] = compact([seqs, num_spec + 1], T.int32)
            t["num_accepted"] = compact([seqs], T.int32)
        return t

    def _args(self, tensors):
        return T.GatedDeltaArgs(scale=self._opts.scale, use_l2norm=int(self._opts.use_l2norm), **tensors)

    def run(self, q, k, v, g, beta, *, query_start_loc, state_indices, has_initial_state, spec_state_indices=None,
            num_accepted=None, out=None, pool=None, stream=None):
        """q, k [T, H, Dk], v [T, HV, Dv], g and beta [T, HV] and the device metadata. Returns out [T, HV, Dv]."""
        self._need_plan()
        o = self._opts
        if out is None:
            out = empty_like(q, (shape_of(q)[0], o.HV, o.Dv), o.q_dtype)
        c = Call(self.ctx, stream, (q, k, v, g, beta, out))
        t = c.tensors(query=(q, o.q_dtype), key=(k, o.q_dtype), value=(v, o.q_dtype), g=(g, o.gate_dtype),
                      beta=(beta, o.gate_dtype), out=(out, o.q_dtype), query_start_loc=query_start_loc,
                      state_indices=state_indices, has_initial_state=has_initial_state,
                      spec_state_indices=spec_state_indices, num_accepted=num_accepted)
        t["state"] = self._pool_tensor(c, pool)
        self._run(c, self._args(t), q)
        return out
