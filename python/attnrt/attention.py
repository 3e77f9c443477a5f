"""Paged attention, KV writes, merging partial states and cascade attention."""
import ctypes
from ctypes import byref
from types import SimpleNamespace

from . import _call
from . import _types as T
from ._call import Call, empty_like, shape_of
from ._lib import Error, call
from ._planned import PlannedOp, cache_tensor, compact, make_plan


def kv_write(ctx, key, value, slot_mapping, key_cache, value_cache, *, key_scale=None, value_scale=None,
             slot_mapping_host=None, kv_cache_dtype=None, stream=None):
    """Writes key/value rows [T, Hkv, D] into the paged caches at slot_mapping [T] (int64; < 0 skipped).

    kv_cache_dtype: the caches' element type when they are stored as raw bytes (fp8 in uint8 tensors);
    key_scale / value_scale: their f32 scales. slot_mapping_host: a host copy, checked before dispatch."""
    c = Call(ctx, stream, (key, value, key_cache, value_cache))
    cache_dtype = T.dtype(kv_cache_dtype) if kv_cache_dtype is not None else None
    args = T.KvWriteArgs(**c.tensors(key=key, value=value, slot_mapping=slot_mapping,
                                      key_cache=(key_cache, None, cache_dtype),
                                      value_cache=(value_cache, None, cache_dtype), key_scale=key_scale,
                                      value_scale=value_scale))
    slots = _call.host(slot_mapping_host, ctypes.c_int64, "slot_mapping_host")
    if slots is not None:
        args.slot_mapping_host = slots.ptr
    call("attnrt_kv_write", ctx.handle, byref(args), c.stream_handle)


def merge_states(ctx, states, lses, out=None, out_lse=None, *, sinks=None, return_lse=False, stream=None):
    """Merges n partial attention states (o_i [T, H, D], lse_i [T, H] f32) into out; returns out, or
    (out, out_lse) when out_lse is given or return_lse is set. sinks [H] f32 are applied after the merge."""
    states, lses = list(states), list(lses)
    if not states or len(states) != len(lses):
        raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: merge_states needs as many lses as states (>= 1); got "
                    "%d and %d" % (len(states), len(lses)))
    if out is None:
        out = empty_like(states[0], shape_of(states[0]))
    if out_lse is None and return_lse:
        out_lse = empty_like(states[0], shape_of(lses[0]), T.float32)
    c = Call(ctx, stream, states + lses + [out])
    n = len(states)
    state_ptrs = (T.TensorP * n)(*[c.tensor(s, what="states[%d]" % i) for i, s in enumerate(states)])
    lse_ptrs = (T.TensorP * n)(*[c.tensor(s, what="lses[%d]" % i) for i, s in enumerate(lses)])
    args = T.MergeArgs(num_states=n, states=state_ptrs, lses=lse_ptrs,
                       **c.tensors(out=out, out_lse=out_lse, sinks=sinks))
    call("attnrt_merge_states", ctx.handle, byref(args), c.stream_handle)
    return (out, out_lse) if out_lse is not None else out


def _options(num_q_heads, num_kv_heads, head_dim, block_size, num_blocks, head_dim_v=None, q_dtype="f32",
             kv_dtype=None, out_dtype=None, kv_layout="NHD", causal=False, scale=0.0, softcap=0.0,
             sliding_window_left=0, sliding_window_right=0, return_lse=False, alibi=False, sinks=False,
             kv_scale=None):
    """The layout and options a plan fixes (see PagedAttention.plan)."""
    q_dtype = T.dtype(q_dtype)
    if kv_scale not in (None, "tensor", "block"):
        raise ValueError("attnrt: kv_scale must be None, 'tensor' ([1]) or 'block' ([num_blocks, num_kv_heads])")
    return SimpleNamespace(
        num_q_heads=int(num_q_heads), num_kv_heads=int(num_kv_heads), head_dim=int(head_dim),
        head_dim_v=int(head_dim if head_dim_v is None else head_dim_v), block_size=int(block_size),
        num_blocks=int(num_blocks), q_dtype=q_dtype, kv_dtype=T.dtype(kv_dtype) if kv_dtype else q_dtype,
        out_dtype=T.dtype(out_dtype) if out_dtype else q_dtype, kv_layout=kv_layout, causal=bool(causal),
        scale=float(scale), softcap=float(softcap), sliding_window_left=int(sliding_window_left),
        sliding_window_right=int(sliding_window_right), return_lse=bool(return_lse), alibi=bool(alibi),
        sinks=bool(sinks), kv_scale=kv_scale)


class _AttentionLayout:
    """The tensors and args of paged attention, shared by PagedAttention and Cascade."""

    _opts = None
    _dims = None  # (tokens, requests, blocks a request)

    def _attention_compact(self):
        o = self._opts
        tokens, seqs, blocks = self._dims
        t = dict(query=compact([tokens, o.num_q_heads, o.head_dim], o.q_dtype),
                 key_cache=cache_tensor(o.num_blocks, o.block_size, o.num_kv_heads, o.head_dim, o.kv_dtype,
                                        o.kv_layout),
                 value_cache=cache_tensor(o.num_blocks, o.block_size, o.num_kv_heads, o.head_dim_v, o.kv_dtype,
                                          o.kv_layout),
                 block_table=compact([seqs, blocks], T.int32), query_start_loc=compact([seqs + 1], T.int32),
                 seq_lens=compact([seqs], T.int32), out=compact([tokens, o.num_q_heads, o.head_dim_v], o.out_dtype))
        if o.return_lse:
            t["lse"] = compact([tokens, o.num_q_heads], T.float32)
        if o.alibi:
            t["alibi_slopes"] = compact([o.num_q_heads], T.float32)
        if o.sinks:
            t["sinks"] = compact([o.num_q_heads], T.float32)
        if o.kv_scale:
            shape = [1] if o.kv_scale == "tensor" else [o.num_blocks, o.num_kv_heads]
            t["key_scale"] = compact(shape, T.float32)
            t["value_scale"] = compact(shape, T.float32)
        return t

    def _attention_args(self, tensors):
        o = self._opts
        return T.AttentionArgs(scale=o.scale, softcap=o.softcap, causal=int(o.causal),
                               sliding_window_left=o.sliding_window_left,
                               sliding_window_right=o.sliding_window_right, **tensors)

    def _outputs(self, q, out, lse):
        o = self._opts
        tokens = shape_of(q)[0]
        if out is None:
            out = empty_like(q, (tokens, o.num_q_heads, o.head_dim_v), o.out_dtype)
        if lse is None and o.return_lse:
            lse = empty_like(q, (tokens, o.num_q_heads), T.float32)
        return out, lse

    def _attention_run_tensors(self, c, q, k_cache, v_cache, block_table, query_start_loc, seq_lens, out, lse,
                               alibi_slopes, sinks, k_scale, v_scale, kv_cache_dtype):
        o = self._opts
        cache_dtype = T.dtype(kv_cache_dtype) if kv_cache_dtype is not None else None
        return c.tensors(query=(q, o.q_dtype), key_cache=(k_cache, o.kv_dtype, cache_dtype),
                         value_cache=(v_cache, o.kv_dtype, cache_dtype), block_table=block_table,
                         query_start_loc=query_start_loc, seq_lens=seq_lens, out=(out, o.out_dtype), lse=lse,
                         alibi_slopes=alibi_slopes, sinks=sinks, key_scale=k_scale, value_scale=v_scale)


class PagedAttention(_AttentionLayout, PlannedOp):
    """Paged attention over a mixed prefill/decode batch: plan once per step, run per layer.

        attn = attnrt.PagedAttention(ctx)
        attn.plan(query_start_loc, seq_lens, block_table, num_q_heads=32, num_kv_heads=8, head_dim=128,
                  block_size=16, num_blocks=cache.shape[0], q_dtype="bf16", causal=True)
        out = attn.run(q, k_cache, v_cache, block_table=bt, query_start_loc=qsl, seq_lens=lens)

    For CUDA graphs, plan_capacity() once, update() each step and replay the captured run()s."""

    _run_fn = "attnrt_attention_run"

    def __init__(self, ctx, workspace=None):
        super().__init__(ctx, workspace)
        self._capacity = None
        self._batch = None

    def plan(self, query_start_loc, seq_lens, block_table, **options):
        """Plans a batch from its host metadata: query_start_loc [B + 1], seq_lens [B], block_table
        [B, max_blocks] (numpy arrays, lists or CPU tensors).

        Options: num_q_heads, num_kv_heads, head_dim, block_size, num_blocks (required); head_dim_v,
        q_dtype ("f32"), kv_dtype / out_dtype (q_dtype), kv_layout ("NHD" or "HND"), causal, scale
        (0: 1/sqrt(head_dim)), softcap, sliding_window_left / _right (0: unlimited), return_lse, alibi,
        sinks (whether those tensors are passed), kv_scale (None, "tensor" or "block": fp8 caches)."""
        self._opts = _options(**options)
        batch, arrays = _call.batch_host(query_start_loc, seq_lens, block_table)
        self._capacity, self._batch = None, (batch, arrays)
        self._dims = (arrays[0].last(), len(arrays[1]), arrays[2].shape[1])
        self._new_batch(lambda args: make_plan(self.ctx, "attnrt_attention_plan", byref(args), byref(batch)))

    def plan_capacity(self, *, max_seqs, max_blocks_per_seq, max_tokens, max_seq_len=0, **options):
        """Plans once for every batch within the capacity (for graphs replayed across batches). Runs then take
        tensors of the capacity's shapes: q / out [max_tokens, ...], block_table [max_seqs, max_blocks_per_seq],
        query_start_loc [max_seqs + 1], seq_lens [max_seqs]; update() gives each step's batch."""
        self._opts = _options(**options)
        self._capacity = T.Capacity(max_seqs=int(max_seqs), max_blocks_per_seq=int(max_blocks_per_seq),
                                    max_tokens=int(max_tokens), max_seq_len=int(max_seq_len))
        self._batch = None
        self._dims = (int(max_tokens), int(max_seqs), int(max_blocks_per_seq))
        self._new_batch(lambda args: make_plan(self.ctx, "attnrt_attention_plan_capacity", byref(args),
                                               byref(self._capacity)))

    def update(self, query_start_loc, seq_lens, block_table, *, stream=None):
        """Gives a capacity plan the step's batch (host metadata). The plan's device metadata is written in
        order on `stream` (default: torch's current stream on a CUDA device), so runs and graph replays
        queued after it compute this batch."""
        if self._capacity is None:
            raise Error(T.Status.ERR_INVALID_ARGUMENT, "attnrt: PagedAttention.update needs a plan from "
                        "plan_capacity(); plan() plans one batch")
        batch, arrays = _call.batch_host(query_start_loc, seq_lens, block_table)
        c = Call(self.ctx, stream, (), torch_default=True)
        for plan in self._plans.values():
            call("attnrt_plan_update", plan.handle, byref(batch), c.stream_handle)
        self._batch = (batch, arrays)

    def _compact_tensors(self):
        return self._attention_compact()

    def _args(self, tensors):
        return self._attention_args(tensors)

    def _replan(self, args, stream):
        if self._capacity is None:
            return make_plan(self.ctx, "attnrt_attention_plan", byref(args), byref(self._batch[0]))
        plan = make_plan(self.ctx, "attnrt_attention_plan_capacity", byref(args), byref(self._capacity))
        if self._batch is not None:
            call("attnrt_plan_update", plan.handle, byref(self._batch[0]), stream)
        return plan

    def run(self, q, k_cache, v_cache, *, block_table, query_start_loc, seq_lens, out=None, lse=None,
            alibi_slopes=None, sinks=None, k_scale=None, v_scale=None, kv_cache_dtype=None, stream=None):
        """Attention of q [T, Hq, D] over the paged caches; returns out [T, Hq, Dv] (allocated like q when not
        given), or (out, lse) when the plan has return_lse or lse is given. block_table, query_start_loc and
        seq_lens are the device copies of the planned batch. Torch CUDA tensors run on torch's current
        stream unless `stream` says otherwise."""
        self._need_plan()
        out, lse = self._outputs(q, out, lse)
        c = Call(self.ctx, stream, (q, k_cache, v_cache, out))
        tensors = self._attention_run_tensors(c, q, k_cache, v_cache, block_table, query_start_loc, seq_lens, out,
                                              lse, alibi_slopes, sinks, k_scale, v_scale, kv_cache_dtype)
        self._run(c, self._args(tensors), q)
        return (out, lse) if lse is not None else out


class Cascade(_AttentionLayout, PlannedOp):
    """Shared-prefix attention: every query attends to its request's prefix (no mask) and, as the options
    say, to its own suffix, whose positions count from the prefix's end. Plan once per step, run per layer."""

    _run_fn = "attnrt_cascade_run"

    def plan(self, query_start_loc, seq_lens, block_table, prefix_seq_lens, prefix_block_table, **options):
        """query_start_loc / seq_lens / block_table: the suffixes (as PagedAttention.plan); prefix_seq_lens [B];
        prefix_block_table [B, max_prefix_blocks], or 1-D [max_prefix_blocks]: one prefix every request
        shares. Options as PagedAttention.plan (ALiBi and sliding windows are refused for cascade)."""
        self._opts = _options(**options)
        suffix, arrays = _call.batch_host(query_start_loc, seq_lens, block_table)
        shared = _ndim(prefix_block_table) == 1
        prefix_lens = _call.host(prefix_seq_lens, ctypes.c_int32, "prefix_seq_lens")
        prefix_table = _call.host([prefix_block_table] if shared else prefix_block_table, ctypes.c_int32,
                                  "prefix_block_table", 2)
        prefix = T.BatchHost(num_seqs=len(prefix_lens), seq_lens=prefix_lens.ptr, block_table=prefix_table.ptr,
                             block_table_stride=0 if shared else prefix_table.shape[1])
        self._host = T.CascadeHost(prefix=ctypes.pointer(prefix), suffix=ctypes.pointer(suffix))
        self._host_keep = (arrays, prefix_lens, prefix_table, prefix, suffix)
        self._dims = (arrays[0].last(), len(arrays[1]), arrays[2].shape[1])
        self._prefix_dims = (prefix_table.shape[1], shared)
        self._new_batch(lambda args: self._replan(args, None))

    def _compact_tensors(self):
        t = self._attention_compact()
        seqs = self._dims[1]
        blocks, shared = self._prefix_dims
        t["prefix_block_table"] = ctypes.pointer(
            T.Tensor.make([seqs, blocks], T.int32, strides=[0 if shared else blocks, 1]))
        t["prefix_seq_lens"] = compact([seqs], T.int32)
        return t

    def _args(self, tensors):
        prefix_bt = tensors.pop("prefix_block_table")
        prefix_lens = tensors.pop("prefix_seq_lens")
        suffix = self._attention_args(tensors)
        return T.CascadeArgs(suffix=ctypes.pointer(suffix), prefix_block_table=prefix_bt, prefix_seq_lens=prefix_lens)

    def _replan(self, args, stream):
        return make_plan(self.ctx, "attnrt_cascade_plan", byref(args), byref(self._host))

    def run(self, q, k_cache, v_cache, *, block_table, query_start_loc, seq_lens, prefix_block_table,
            prefix_seq_lens, out=None, lse=None, sinks=None, k_scale=None, v_scale=None, kv_cache_dtype=None,
            stream=None):
        """Cascade attention; the device tensors as in PagedAttention.run plus the prefix's (a 1-D
        prefix_block_table is shared by every request). Returns out, or (out, lse)."""
        self._need_plan()
        out, lse = self._outputs(q, out, lse)
        c = Call(self.ctx, stream, (q, k_cache, v_cache, out))
        tensors = self._attention_run_tensors(c, q, k_cache, v_cache, block_table, query_start_loc, seq_lens, out,
                                              lse, None, sinks, k_scale, v_scale, kv_cache_dtype)
        prefix_bt = c.tensor(prefix_block_table, what="prefix_block_table")
        if prefix_bt[0].ndim == 1:  # one shared prefix: a [B, blocks] view with dim-0 stride 0
            t = prefix_bt[0]
            t.ndim, t.shape[1], t.strides[1] = 2, t.shape[0], t.strides[0]
            t.shape[0], t.strides[0] = shape_of(seq_lens)[0], 0
        tensors["prefix_block_table"] = prefix_bt
        tensors["prefix_seq_lens"] = c.tensor(prefix_seq_lens, what="prefix_seq_lens")
        self._run(c, self._args(tensors), q)
        return (out, lse) if lse is not None else out


def _ndim(x):
    if hasattr(x, "ndim"):
        return int(x.ndim)
    return 2 if x and isinstance(x[0], (list, tuple)) else 1

