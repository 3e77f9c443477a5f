#!/usr/bin/env python3
"""peer_matmul.py -- the matmul ceiling for bench/h200's compute-bound rows: PyTorch's bf16 matrix
product (cuBLAS) on random data, measured in the same call as the rows it judges.

    python3 bench/h200/peer_matmul.py OUT.json [N]        (default N = 8192: C[N,N] = A[N,N] B[N,N])

Why a peer: a tensor-core kernel (prefill, MLA decode) is bounded by the chip's matrix rate, and the
datasheet's ~990 TFLOP/s dense bf16 is not what any library reaches under this board's power and
clocks; cuBLAS's rate on a large square product is the practical ceiling. Random normal data, not
zeros: the tensor cores' power (and so the clock) depends on the bit patterns.
Timing: CUDA events around each product, 5 warm-ups, 30 timed; median and best. One JSON object.
"""
import json
import statistics
import sys


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: python3 bench/h200/peer_matmul.py OUT.json [N]", file=sys.stderr)
        return 2
    n = int(sys.argv[2]) if len(sys.argv) == 3 else 8192
    rec = {"op": "matmul", "backend": "torch.matmul (cuBLAS)", "dtype": "bf16", "m": n, "n": n, "k": n}
    try:
        import torch
        g = torch.Generator(device="cuda").manual_seed(4321)
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(5):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        times = []
        for _ in range(30):
            t0 = torch.cuda.Event(enable_timing=True)
            t1 = torch.cuda.Event(enable_timing=True)
            t0.record()
            torch.matmul(a, b, out=c)
            t1.record()
            t1.synchronize()
            times.append(t0.elapsed_time(t1))
        flops = 2.0 * n * n * n
        ms = statistics.median(times)
        rec.update(ms=ms, tflops=flops / (ms * 1e-3) / 1e12, tflops_best=flops / (min(times) * 1e-3) / 1e12,
                   torch=torch.__version__, gpu=torch.cuda.get_device_name())
    except Exception as e:  # no torch, no GPU: the rows are reported without this ceiling
        rec["error"] = "%s: %s" % (type(e).__name__, e)
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
    if "tflops" in rec:
        print("matmul ceiling: %.0f TFLOP/s median (best %.0f), bf16 %d^3, %s" % (rec["tflops"], rec["tflops_best"], n,
                                                                                 rec["backend"]))
    else:
        print("matmul ceiling: not measured (%s)" % rec["error"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
