#!/usr/bin/env python3
"""peer_sdpa.py -- the peer for bench/h200/run.sh: PyTorch's scaled_dot_product_attention with the
flash and the cuDNN backends, on the same shapes as attnrt's runs but with DENSE (contiguous) KV.

    python3 bench/h200/peer_sdpa.py OUT.jsonl SHAPE...
    SHAPE = id:op:batch:ctx:new_tokens:heads:kv_heads:head_dim   (op: decode | prefill)

Decode: q [B, Hq, 1, D] over k, v [B, Hkv, ctx, D], no mask (the one query sees every key). Prefill:
q, k, v [B, H, S, D], causal. bf16. GQA through enable_gqa=True where the backend takes it; where it
does not, K/V are expanded to Hq heads first (noted; the table still counts the logical KV bytes).
Timing: CUDA events around each call, 3 warm-ups, median of 20 ("ms": calls back to back); and the same
calls each enqueued behind a 128 MiB device copy, as attnrt-bench's queued timer does ("ms_queued": the
L2 then holds the copy's dirty lines, whose write-back the call pays, like attnrt's runs). One JSON object
per line.
"""
import json
import statistics
import sys


QUEUE_COPY_BYTES = 128 << 20  # attnrt-bench's queued timer (tools/bench_ops.c)


def time_ms(fn, warmup=3, iters=20, copy=None):
    """Median ms of fn between two events; with copy (dst, src), each call is enqueued behind that copy."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        if copy:  # twice: torch's host dispatch of the call must not outlast the copy in front of it
            copy[0].copy_(copy[1])
            copy[0].copy_(copy[1])
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def run_shape(spec, out):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sid, op, B, ctx, new, hq, hkv, d = spec.split(":")
    B, ctx, new, hq, hkv, d = int(B), int(ctx), int(new), int(hq), int(hkv), int(d)
    lq = 1 if op == "decode" else new
    g = torch.Generator(device="cuda").manual_seed(1234)
    q = torch.randn(B, hq, lq, d, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(B, hkv, ctx, d, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(B, hkv, ctx, d, device="cuda", dtype=torch.bfloat16, generator=g)
    causal = op == "prefill"
    copy = (torch.empty(QUEUE_COPY_BYTES, device="cuda", dtype=torch.uint8),
            torch.full((QUEUE_COPY_BYTES,), 0x3C, device="cuda", dtype=torch.uint8))
    kv_bytes = 2.0 * B * ctx * hkv * d * 2
    pairs = sum(ctx - lq + i + 1 for i in range(lq)) if causal else lq * ctx
    flops = 2.0 * hq * 2 * d * pairs * B
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        rec = {"id": sid, "backend": name, "op": op, "kv_bytes": kv_bytes, "flops": flops}
        try:
            with sdpa_kernel([backend]):
                try:
                    fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
                    fn()
                    rec["note"] = "enable_gqa"
                except Exception:  # the backend refuses GQA: expand the KV heads (more bytes moved)
                    ke = k.repeat_interleave(hq // hkv, dim=1)
                    ve = v.repeat_interleave(hq // hkv, dim=1)
                    fn = lambda: F.scaled_dot_product_attention(q, ke, ve, is_causal=causal)
                    fn()
                    rec["note"] = "KV expanded to Hq heads"
                rec["ms"] = time_ms(fn)
                rec["ms_queued"] = time_ms(fn, copy=copy)
        except Exception as e:  # noqa: BLE001 -- report, never stop the run
            rec["error"] = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        out.write(json.dumps(rec) + "\n")
        out.flush()
        print(json.dumps(rec), flush=True)
    del q, k, v, copy
    torch.cuda.empty_cache()


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    import torch
    print(f"peer: torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
    with open(sys.argv[1], "a", encoding="utf-8") as out:
        for spec in sys.argv[2:]:
            run_shape(spec, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
