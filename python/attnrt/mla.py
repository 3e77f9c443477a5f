"""Multi-head latent attention (dense or sparse) over a latent paged cache."""
import ctypes
from ctypes import byref
from types import SimpleNamespace

from . import _call
from . import _types as T
from ._call import Call, empty_like, shape_of
from ._lib import Error
from ._planned import PlannedOp, compact, make_plan


class MLA(PlannedOp):
    """MLA with absorbed weights: q [T, Hq, kv_dim] over a cache [num_blocks, block_size, 1, kv_dim]; the value
    of a key is the first v_dim columns of its row. Plan once per step, run per layer.

        mla = attnrt.MLA(ctx)
        mla.plan(qsl, seq_lens, block_table, num_heads=16, kv_dim=576, v_dim=512, block_size=64,
                 num_blocks=cache.shape[0], scale=mscale / 192 ** 0.5, q_dtype="bf16", causal=True)
        out = mla.run(q, cache, block_table=bt, query_start_loc=qsl_d, seq_lens=lens_d)"""

    _run_fn = "attnrt_mla_run"

    def plan(self, query_start_loc, seq_lens, block_table, *, num_heads, kv_dim, v_dim, block_size, num_blocks,
             scale, q_dtype="f32", kv_dtype=None, out_dtype=None, causal=False, return_lse=False, sinks=False,
             kv_scale=None, topk=None, indices=None):
        """Host metadata as PagedAttention.plan. scale is required (> 0). Sparse MLA: topk (indices per query),
        or indices, the host copy [T, topk] of the indices, which the plan checks against seq_lens.
        kv_scale: None, "tensor" ([1]) or "block" ([num_blocks, 1]) for fp8 caches."""
        if kv_scale not in (None, "tensor", "block"):
            raise ValueError("attnrt: kv_scale must be None, 'tensor' or 'block'")
        q_dtype = T.dtype(q_dtype)
        batch, arrays = _call.batch_host(query_start_loc, seq_lens, block_table)
        idx = _call.host(indices, ctypes.c_int32, "indices", 2)
        if idx is not None:
            topk = idx.shape[1]
        self._opts = SimpleNamespace(
            num_heads=int(num_heads), kv_dim=int(kv_dim), v_dim=int(v_dim), block_size=int(block_size),
            num_blocks=int(num_blocks), scale=float(scale), q_dtype=q_dtype,
            kv_dtype=T.dtype(kv_dtype) if kv_dtype else q_dtype, out_dtype=T.dtype(out_dtype) if out_dtype else q_dtype,
            causal=bool(causal), return_lse=bool(return_lse), sinks=bool(sinks), kv_scale=kv_scale,
            topk=None if topk is None else int(topk))
        self._batch, self._indices = (batch, arrays), idx
        self._dims = (arrays[0].last(), len(arrays[1]), arrays[2].shape[1])
        self._new_batch(lambda args: self._replan(args, None))

    def _compact_tensors(self):
        o = self._opts
        tokens, seqs, blocks = self._dims
        t = dict(query=compact([tokens, o.num_heads, o.kv_dim], o.q_dtype),
                 kv_cache=compact([o.num_blocks, o.block_size, 1, o.kv_dim], o.kv_dtype),
                 block_table=compact([seqs, blocks], T.int32), query_start_loc=compact([seqs + 1], T.int32),
                 seq_lens=compact([seqs], T.int32), out=compact([tokens, o.num_heads, o.v_dim], o.out_dtype))
        if o.return_lse:
            t["lse"] = compact([tokens, o.num_heads], T.float32)
        if o.sinks:
            t["sinks"] = compact([o.num_heads], T.float32)
        if o.kv_scale:
            t["kv_scale"] = compact([1] if o.kv_scale == "tensor" else [o.num_blocks, 1], T.float32)
        if o.topk is not None:
            t["indices"] = compact([tokens, o.topk], T.int32)
        return t

    def _args(self, tensors):
        return T.MlaArgs(scale=self._opts.scale, causal=int(self._opts.causal), **tensors)

    def _replan(self, args, stream):
        if self._indices is not None and args.indices:
            args.indices_host = self._indices.ptr
        try:
            return make_plan(self.ctx, "attnrt_mla_plan", byref(args), byref(self._batch[0]))
        finally:
            args.indices_host = None  # the host copy is for the plan's checks only

    def run(self, q, kv_cache, *, block_table, query_start_loc, seq_lens, out=None, lse=None, sinks=None,
            kv_scale=None, indices=None, kv_cache_dtype=None, stream=None):
        """MLA of q over kv_cache; indices [T, topk] int32 (device) for sparse plans. Returns out [T, Hq, v_dim]
        (allocated like q when not given), or (out, lse)."""
        self._need_plan()
        o = self._opts
        if (indices is None) != (o.topk is None):
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: MLA.run: the plan is %s, so indices must %s" % (
                ("dense", "not be given") if o.topk is None else ("sparse", "be given")))
        tokens = shape_of(q)[0]
        if out is None:
            out = empty_like(q, (tokens, o.num_heads, o.v_dim), o.out_dtype)
        if lse is None and o.return_lse:
            lse = empty_like(q, (tokens, o.num_heads), T.float32)
        c = Call(self.ctx, stream, (q, kv_cache, out))
        cache_dtype = T.dtype(kv_cache_dtype) if kv_cache_dtype is not None else None
        t = c.tensors(query=(q, o.q_dtype), kv_cache=(kv_cache, o.kv_dtype, cache_dtype), block_table=block_table,
                      query_start_loc=query_start_loc, seq_lens=seq_lens, out=(out, o.out_dtype), lse=lse,
                      sinks=sinks, kv_scale=kv_scale, indices=indices)
        self._run(c, self._args(t), q)
        return (out, lse) if lse is not None else out
