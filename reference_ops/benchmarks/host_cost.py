#!/usr/bin/env python
"""Per-call host cost (microseconds) of reference_ops' norms against torch's, eager, no graphs.

For layer_norm and rms_norm, the functions (reference_ops.layer_norm / rms_norm vs F.layer_norm /
F.rms_norm) and the modules (reference_ops.LayerNorm / RMSNorm vs torch.nn.LayerNorm / RMSNorm),
on a small input (8x512: the kernels take a few microseconds, so the Python, dispatcher, autograd
and launch path is what is measured):

* no-grad forward (ours runs its inference op);
* forward with grad (x and the parameters require grad: autograd records the node; the result
  is dropped);
* forward + backward (torch.autograd.grad of x and the parameters);
* compiled: the function under torch.compile (fullgraph, static shapes), no-grad forward: the cost
  of a norm inside a compiled graph (decode steps of a compiled model are made of such calls). By
  default ours is the ops' math there, a kernel inductor generates and launches itself as it does
  torch's; with --compiled-ops kernels it is the opaque op, which inductor's wrapper calls through
  the dispatcher (reference_ops.keep_kernels_when_compiled).

Method: each case is called N times in a loop, the device synchronised once at the end, the wall
time divided by N; repeated R times in rounds that go through every case (ours and torch side by
side in one process), median of the rounds. Every other round goes through the cases in reverse
order, ours before torch's, so a host that speeds up or slows down over a run (clocks, other
processes) favours neither side. On CUDA (bfloat16 by default) this is the time the host
needs to issue a call, the kernels being shorter; on the CPU (float32) it is the whole call, the
Python/autograd path included.
Target: ours <= torch in every row (reported as met / missed; the exit status is 0 either way).
With --control torch's norms are timed a second time, as a case of their own ("twin": new
tensors, module and compiled function): twin / torch is what the method reads for two identical
calls, the resolution against which a row's ours / torch means something.

Usage: python benchmarks/host_cost.py [--device cuda|cpu] [--shape 8x512] [--dtype bf16]
       [--calls 2000] [--repeats 7] [--compiled-ops math|kernels] [--control] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import reference_ops  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
OPS = ("layer_norm", "rms_norm")
APIS = ("function", "module", "compiled")
PASSES = ("no-grad fwd", "fwd w/ grad", "fwd+bwd")
# The compiled rows: a model's compiled inference (its training graphs run the *_fwd / *_bwd ops).
API_PASSES = {"function": PASSES, "module": PASSES, "compiled": ("no-grad fwd",)}
EPS = 1e-5


def make_callables(op: str, api: str, impl: str, m: int, n: int, dtype, device):
    """{pass: fn} for one op, API and implementation ("torch", "ours", or "twin": torch's again);
    fresh tensors of their own."""
    impl = "ours" if impl == "ours" else "torch"
    g = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(m, n, generator=g).to(device=device, dtype=dtype)
    dy = torch.randn(m, n, generator=g).to(device=device, dtype=dtype)
    if api == "module":
        cls = {
            ("layer_norm", "torch"): torch.nn.LayerNorm,
            ("layer_norm", "ours"): reference_ops.LayerNorm,
            ("rms_norm", "torch"): torch.nn.RMSNorm,
            ("rms_norm", "ours"): reference_ops.RMSNorm,
        }[op, impl]
        module = cls(n, device=device, dtype=dtype)
        params = list(module.parameters())
        call = module
    else:  # the function, called directly or compiled
        w = torch.ones(n, device=device, dtype=dtype, requires_grad=True)
        b = torch.zeros(n, device=device, dtype=dtype, requires_grad=True)
        if op == "layer_norm":
            fn = reference_ops.layer_norm if impl == "ours" else F.layer_norm
            params = [w, b]

            def call(t, fn=fn):
                return fn(t, (n,), w, b, EPS)

        else:
            fn = reference_ops.rms_norm if impl == "ours" else F.rms_norm
            params = [w]

            def call(t, fn=fn):
                return fn(t, (n,), w, EPS)

    if api == "compiled":
        compiled = torch.compile(call, dynamic=False, fullgraph=True)

        def compiled_forward():
            with torch.no_grad():
                compiled(x)

        return {"no-grad fwd": compiled_forward}

    x_grad = x.detach().requires_grad_()
    inputs = [x_grad] + params

    def no_grad_forward():
        with torch.no_grad():
            call(x)

    def forward_with_grad():
        call(x_grad)

    def forward_backward():
        torch.autograd.grad(call(x_grad), inputs, dy)

    return {"no-grad fwd": no_grad_forward, "fwd w/ grad": forward_with_grad, "fwd+bwd": forward_backward}


def per_call_us(fn, calls: int, device: str) -> float:
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls * 1e6


def measure(device: str, m: int, n: int, dtype, calls: int, repeats: int, control: bool = False) -> list[dict]:
    impls = ("torch", "ours", "twin") if control else ("torch", "ours")
    cases = {}
    for op in OPS:
        for api in APIS:
            for impl in impls:
                for name, fn in make_callables(op, api, impl, m, n, dtype, device).items():
                    cases[op, api, name, impl] = fn
    for fn in cases.values():  # warm-up: first-call costs, allocator, lazy initialisation
        per_call_us(fn, max(10, calls // 10), device)
    samples = {key: [] for key in cases}
    for repeat in range(repeats):
        keys = list(cases) if repeat % 2 == 0 else list(reversed(cases))
        for key in keys:
            samples[key].append(per_call_us(cases[key], calls, device))
    rows = []
    for op in OPS:
        for api in APIS:
            for name in API_PASSES[api]:
                us = {impl: statistics.median(samples[op, api, name, impl]) for impl in impls}
                rows.append(dict(op=op, api=api, pass_=name, **{f"{impl}_us": us[impl] for impl in impls}))
    return rows


def print_table(rows) -> None:
    twin = "twin_us" in rows[0]
    print(
        f"{'op':<11} {'api':<9} {'pass':<12} {'torch us':>9} {'ours us':>9} {'ours/torch':>10}"
        + (f" {'twin/torch':>10}" if twin else "")
        + "  target"
    )
    for r in rows:
        ratio = r["ours_us"] / r["torch_us"]
        print(
            f"{r['op']:<11} {r['api']:<9} {r['pass_']:<12} {r['torch_us']:>9.2f} {r['ours_us']:>9.2f}"
            f" {ratio:>10.3f}"
            + (f" {r['twin_us'] / r['torch_us']:>10.3f}" if twin else "")
            + f"  {'met' if ratio <= 1.0 else 'missed'}"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--shape", default="8x512")
    parser.add_argument("--dtype", choices=sorted(DTYPES), help="default: bf16 on CUDA, fp32 on the CPU")
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed loop")
    parser.add_argument("--repeats", type=int, default=7, help="timed loops per case (median)")
    parser.add_argument(
        "--compiled-ops",
        choices=["math", "kernels"],
        default="math",
        help="what the compiled rows trace from ours: the ops' math (default) or the kernels",
    )
    parser.add_argument(
        "--control", action="store_true", help="also time torch's norms a second time (twin): the A/A resolution"
    )
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    reference_ops.keep_kernels_when_compiled(args.compiled_ops == "kernels")
    device = args.device
    dtype = DTYPES[args.dtype or ("bf16" if device == "cuda" else "fp32")]
    m, n = (int(v) for v in args.shape.split("x"))
    label = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    print(
        f"host cost per call, {label}, {m}x{n} {str(dtype).replace('torch.', '')}, torch {torch.__version__}, "
        f"{args.calls} calls x {args.repeats} repeats (median), compiled ops: {args.compiled_ops}"
    )
    rows = measure(device, m, n, dtype, args.calls, args.repeats, args.control)
    print_table(rows)
    missed = sum(r["ours_us"] > r["torch_us"] for r in rows)
    print(f"targets: {len(rows) - missed} met, {missed} missed")
    if args.control:
        twin = [r["twin_us"] / r["torch_us"] for r in rows]
        spread = max(abs(t - 1.0) for t in twin)
        within = sum(1.0 < r["ours_us"] / r["torch_us"] <= 1.0 + spread for r in rows)
        print(
            f"twin / torch {min(twin):.3f}-{max(twin):.3f} (median {statistics.median(twin):.3f}); "
            f"{within} of the {missed} missed rows within the twin's spread ({spread:.3f})"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                dict(device=label, dtype=str(dtype), shape=[m, n], compiled_ops=args.compiled_ops, rows=rows),
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
