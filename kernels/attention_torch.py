#!/usr/bin/env python3
"""Fused attention forward and backward through PyTorch SDPA, written as shardplan JSON lines.

Our own attention kernel (attention_bench.cu) is a CUDA-core reference; the kernels a training run uses are
FlashAttention-2 (PyTorch's flash backend) and cuDNN fused attention (Hopper-class, the 'flash3' table). This
measures both where PyTorch has them, with the FLOP convention of the FlashAttention papers (forward
4*b*h*s^2*d, backward 2.5x forward, halved when causal), so `shardplan calibrate fit` can fill the
attention tables. Usage: attention_torch.py [--skip-done FILE] > rows.jsonl
"""
import argparse
import datetime
import json
import socket
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def done_keys(path):
    keys = set()
    try:
        with open(path) as f:
            for line in f:
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if j.get("record") == "result":
                    keys.add(j["benchmark"] + "|" + json.dumps(j["params"], sort_keys=True, separators=(",", ":")))
    except FileNotFoundError:
        pass
    return keys


def time_it(fn, reps=5, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    one = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    one[0].record()
    fn()
    one[1].record()
    torch.cuda.synchronize()
    iters = max(1, min(1000, int(0.01 / max(one[0].elapsed_time(one[1]) * 1e-3, 1e-7))))
    samples = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        torch.cuda.synchronize()
        samples.append(a.elapsed_time(b) * 1e-3 / iters)
    samples.sort()
    n = len(samples)
    med = samples[n // 2] if n % 2 else 0.5 * (samples[n // 2 - 1] + samples[n // 2])
    return med, samples[0], samples[-1], n, iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-done", default="")
    ap.add_argument("--seqs", default="512,1024,2048,4096,8192")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    args = ap.parse_args()
    done = done_keys(args.skip_done) if args.skip_done else set()
    props = torch.cuda.get_device_properties(0)
    print(json.dumps({"record": "context", "schema_version": 1, "benchmark": "attention", "backend": "torch-sdpa",
                      "gpu": props.name, "cuda": torch.version.cuda, "torch": torch.__version__,
                      "hosts": [socket.gethostname()],
                      "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}),
          flush=True)
    backends = [("flash2", "torch-sdpa-flash", SDPBackend.FLASH_ATTENTION)]
    if props.major >= 9 and hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(("flash3", "torch-sdpa-cudnn", SDPBackend.CUDNN_ATTENTION))
    for kernel, backend, sdp in backends:
        for hd in (64, 128):
            for seq in (int(s) for s in args.seqs.split(",")):
                for causal in (True, False):
                    b, h = args.batch, args.heads
                    q, k, v = (torch.randn(b, h, seq, hd, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                               for _ in range(3))
                    fwd_flops = 4.0 * b * h * seq * seq * hd * (0.5 if causal else 1.0)
                    try:
                        with sdpa_kernel(sdp):
                            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal) \
                                if seq <= 2048 else None
                            wrong = 0 if ref is None else int(((out.float() - ref).abs() > 2e-2 + 2e-2 * ref.abs()).sum())
                            grad = torch.randn_like(out)
                            for direction in ("fwd", "bwd"):
                                params = {"dir": direction, "batch": b, "heads": h, "kv_heads": h, "seq": seq,
                                          "head_dim": hd, "causal": causal, "dtype": "bf16", "backend": backend}
                                key = "attention|" + json.dumps(params, sort_keys=True, separators=(",", ":"))
                                if key in done:
                                    continue
                                if direction == "fwd":
                                    fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                    flops = fwd_flops
                                else:
                                    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                    fn = lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)
                                    flops = 2.5 * fwd_flops
                                med, lo, hi, n, iters = time_it(fn)
                                print(json.dumps({"record": "result", "benchmark": "attention", "backend": backend,
                                                  "kernel": kernel, "params": params, "time_s": med,
                                                  "time_min_s": lo, "time_max_s": hi, "reps": n, "iters": iters,
                                                  "flops": flops, "bytes": 0.0, "wrong": wrong}), flush=True)
                    except RuntimeError as e:  # backend unavailable for this shape
                        print(f"{backend} seq {seq} hd {hd}: {e}".splitlines()[0], file=sys.stderr)
                    del q, k, v
    return 0


if __name__ == "__main__":
    sys.exit(main())
