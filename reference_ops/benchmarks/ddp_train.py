#!/usr/bin/env python
"""Data-parallel training with reference_ops' norms: one process against several.

The LLaMA-style (RMSNorm) and GPT-style (LayerNorm) models of benchmarks/models.py, built with
reference_ops.RMSNorm / LayerNorm ("ours") or with the fused residual modules AddRMSNorm /
AddLayerNorm ("fused"), train for a number of AdamW steps on deterministic data with a
fixed global batch: once in one process, once with DistributedDataParallel over WORLD processes
(each rank takes its slice of the same global batch; NCCL on CUDA, one GPU a rank; gloo on the
CPU). The one process takes the same slices as micro-batches and accumulates their gradients, so
that both runs compute on the same shapes; a full batch in one process computes on other shapes
(other GEMM algorithms), whose rounding a 50-step trajectory can amplify past any useful tolerance.
Checked between the two runs, each within its tolerance:

* the norm parameters' gradients of the first step: both runs start from the same parameters, so
  DDP's all-reduced gradient must equal the one process's accumulated gradient up to the order of
  the sums (this is the check of the all-reduce itself);
* the loss of every step (averaged over ranks) and the norm parameters after the last step: the
  trajectories, which carry the first steps' rounding differences through AdamW.

The norm gradients of the last step are printed too, not checked: they are small sums of terms
that cancel, and a trajectory's drift moves them most. The per-step losses, the largest
differences and the median step time are printed.
Exit status 1 when a difference exceeds its tolerance.

Usage:
  python benchmarks/ddp_train.py --compare                     # both runs, compared (2 processes)
  python benchmarks/ddp_train.py --compare --device cpu --size tiny --steps 10
  python benchmarks/ddp_train.py --compare --launcher torchrun  # the 2-process run under torchrun
  # or by hand:
  python benchmarks/ddp_train.py --micro-batches 2 --out one.json
  torchrun --nproc_per_node 2 benchmarks/ddp_train.py --out two.json
  python benchmarks/ddp_train.py --check one.json two.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import models  # noqa: E402
from e2e import synthetic_tokens  # noqa: E402

# Float32 training. The one process computes on the ranks' slices as micro-batches, so both runs see
# the same shapes (the same GEMM algorithms and norm kernel variants) and differ only where the
# gradients are summed (accumulated in one process, all-reduced across ranks): rounding, which
# AdamW carries through the steps.
TOLERANCES = {"first_grad": 1e-4, "loss": 1e-4, "param": 1e-4}
NAMES = {"first_grad": "norm grads (first step)", "loss": "loss (rel, any step)", "param": "norm params (final)"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train(arch: str, impl: str, args, rank: int, world: int, device: str) -> dict:
    model = models.build(arch, args.size, impl, device=device, seed=args.seed)
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        run = DistributedDataParallel(model, device_ids=[torch.device(device).index] if device != "cpu" else None)
    else:
        run = model
    vocab = model.cfg.vocab
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1, betas=(0.9, 0.95))
    data = synthetic_tokens(vocab, (args.steps * args.global_batch, args.seq + 1), args.seed)
    data = data.view(args.steps, args.global_batch, args.seq + 1)
    # A rank takes its slice of the global batch; one process takes all the slices as micro-batches
    # (--micro-batches), each loss scaled by 1 / micro-batches so that the gradients add up to the mean.
    micro = args.micro_batches if world == 1 else 1
    per_slice = args.global_batch // (world * micro)
    losses, step_ms, first_grads, grads = [], [], {}, {}
    for step in range(args.steps):
        batch = data[step, rank * per_slice * micro : (rank + 1) * per_slice * micro].to(device)
        if device != "cpu":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        loss = torch.zeros((), device=device)
        for part in batch.split(per_slice):
            logits = run(part[:, :-1])
            part_loss = F.cross_entropy(logits.reshape(-1, vocab), part[:, 1:].reshape(-1)) / micro
            part_loss.backward()
            loss += part_loss.detach()
        if step in (0, args.steps - 1):
            norm_grads = {name: p.grad.detach().cpu().tolist() for name, p in models.norm_parameters(model).items()}
            first_grads = first_grads or norm_grads
            grads = norm_grads
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device != "cpu":
            torch.cuda.synchronize(device)
        step_ms.append((time.perf_counter() - start) * 1e3)
        if world > 1:
            dist.all_reduce(loss)
            loss /= world
        losses.append(loss.item())
    params = {name: p.detach().cpu().tolist() for name, p in models.norm_parameters(model).items()}
    return dict(losses=losses, step_ms=step_ms, norm_first_grads=first_grads, norm_grads=grads, norm_params=params)


def worker(rank: int, world: int, args, out: str, port: int | None = None) -> None:
    cuda = args.device == "cuda"
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    device = f"cuda:{local_rank}" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(device)
    else:
        # One thread a process: the runs compared share the same cores.
        torch.set_num_threads(1)
    if world > 1:
        if port is not None:
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ["MASTER_PORT"] = str(port)
        backend = "nccl" if cuda else "gloo"
        kwargs = {"device_id": torch.device(device)} if cuda else {}
        dist.init_process_group(backend, rank=rank, world_size=world, **kwargs)
    try:
        results = {
            f"{arch}/{impl}": train(arch, impl, args, rank, world, device)
            for arch in args.archs.split(",")
            for impl in args.impls.split(",")
        }
        if rank == 0:
            with open(out, "w") as f:
                json.dump(dict(world=world, device=args.device, results=results), f)
        if world > 1:
            dist.barrier()  # no rank tears its process group down while another still uses it
    finally:
        if world > 1:
            dist.destroy_process_group()
    if world > 1:
        # A worker leaves without the interpreter's teardown: there, torch 2.15's gloo backend can
        # abort a process whose work is all done ("terminate called without an active exception",
        # about 1 run in 30 on a loaded machine), and the exit status is what the launcher checks.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def max_rel(a, b) -> float:
    a, b = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


def compare(one: dict, many: dict) -> bool:
    """Print the per-step losses and the largest differences; True when all are within tolerance."""
    ok = True
    w = many["world"]
    for arch, a in one["results"].items():  # arch/impl
        b = many["results"][arch]
        print(f"\n{arch}: loss per step, 1 process vs {w} processes")
        print(f"{'step':>5} {'1 proc':>12} {f'{w} procs':>12} {'rel diff':>10}")
        for i, (la, lb) in enumerate(zip(a["losses"], b["losses"], strict=False)):
            print(f"{i:>5} {la:>12.6f} {lb:>12.6f} {abs(la - lb) / abs(la):>10.2e}")

        def grad_diff(key: str, a=a, b=b) -> float:
            return max(max_rel(b[key][n], a[key][n]) for n in a[key])

        diffs = {
            "first_grad": grad_diff("norm_first_grads"),
            "loss": max(abs(la - lb) / abs(la) for la, lb in zip(a["losses"], b["losses"], strict=False)),
            "param": max(max_rel(b["norm_params"][n], a["norm_params"][n]) for n in a["norm_params"]),
        }
        for key, value in diffs.items():
            good = value <= TOLERANCES[key] and len(a["losses"]) == len(b["losses"])
            ok &= good
            verdict = "ok" if good else "EXCEEDED"
            print(f"{arch}: max diff {NAMES[key]:<24} {value:.3e}  tolerance {TOLERANCES[key]:.0e}  {verdict}")
        print(f"{arch}: max diff {'norm grads (last step)':<24} {grad_diff('norm_grads'):.3e}  (not checked)")
        skip = min(3, len(a["step_ms"]) - 1)
        print(
            f"{arch}: median step time: 1 process {statistics.median(a['step_ms'][skip:]):.2f} ms, "
            f"{w} processes {statistics.median(b['step_ms'][skip:]):.2f} ms"
        )
    print("\nresult:", "1 process and DDP agree" if ok else "DIFFERENCES EXCEED THE TOLERANCE")
    return ok


def launch(args, world: int, out: str) -> None:
    if world == 1:
        worker(0, 1, args, out)
    elif args.launcher == "spawn":
        import torch.multiprocessing as mp

        mp.spawn(worker, args=(world, args, out, free_port()), nprocs=world, join=True)
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(world), "--master_addr",
               "127.0.0.1", "--master_port", str(free_port()), os.path.abspath(__file__), "--out", out,
               *worker_args(args)]  # fmt: skip
        subprocess.run(cmd, check=True)


def worker_args(args) -> list[str]:
    return [
        "--device", args.device, "--archs", args.archs, "--size", args.size, "--steps", str(args.steps),
        "--global-batch", str(args.global_batch), "--micro-batches", str(args.micro_batches),
        "--seq", str(args.seq), "--lr", str(args.lr),
        "--seed", str(args.seed), "--impls", args.impls,
    ]  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--archs", default="llama,gpt")
    parser.add_argument("--impls", default="ours,fused", help="norm implementations: ours, fused or both")
    parser.add_argument("--size", help="models.SIZES key (default: small on CUDA, tiny on the CPU)")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--global-batch", type=int, default=8)
    parser.add_argument(
        "--micro-batches",
        type=int,
        default=1,
        help="one process: split the global batch into this many micro-batches and accumulate their gradients"
        " (--compare uses --nproc: the ranks' slices, so that both runs compute on the same shapes)",
    )
    parser.add_argument("--seq", type=int, help="sequence length (default: 256 on CUDA, 32 on the CPU)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare", action="store_true", help="run 1 process and --nproc processes, compare")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--launcher", choices=["spawn", "torchrun"], default="spawn")
    parser.add_argument("--out", default="ddp_result.json", help="result file of a single run")
    parser.add_argument("--results-dir", help="with --compare: keep the two result files (one.json, many.json) here")
    parser.add_argument("--check", nargs=2, metavar=("ONE", "MANY"), help="compare two result files")
    args = parser.parse_args(argv)
    args.size = args.size or ("small" if args.device == "cuda" else "tiny")
    args.seq = args.seq or (256 if args.device == "cuda" else 32)

    if args.check:
        with open(args.check[0]) as f1, open(args.check[1]) as f2:
            return 0 if compare(json.load(f1), json.load(f2)) else 1
    if not args.compare:  # one run: a single process, or one rank under torchrun
        world = int(os.environ.get("WORLD_SIZE", 1))
        if args.global_batch % (world * args.micro_batches):
            parser.error(f"--global-batch {args.global_batch} does not split over {world * args.micro_batches} slices")
        worker(int(os.environ.get("RANK", 0)), world, args, args.out)
        return 0
    if args.global_batch % args.nproc:
        parser.error(f"--global-batch {args.global_batch} does not split over {args.nproc} processes")
    if args.device == "cuda" and torch.cuda.device_count() < args.nproc:
        parser.error(f"{args.nproc} processes need {args.nproc} GPUs; {torch.cuda.device_count()} visible")
    print(
        f"{args.archs} ({args.size}), reference_ops norms ({args.impls}), {args.steps} steps,"
        f" global batch {args.global_batch} x {args.seq} tokens,"
        f" {args.device} ({'nccl' if args.device == 'cuda' else 'gloo'}), 1 vs {args.nproc} processes"
    )
    with tempfile.TemporaryDirectory() as tmp:
        if args.results_dir:
            os.makedirs(args.results_dir, exist_ok=True)
            tmp = args.results_dir
        one, many = os.path.join(tmp, "one.json"), os.path.join(tmp, "many.json")
        launch(argparse.Namespace(**{**vars(args), "micro_batches": args.nproc}), 1, one)
        launch(args, args.nproc, many)
        with open(one) as f1, open(many) as f2:
            return 0 if compare(json.load(f1), json.load(f2)) else 1


if __name__ == "__main__":
    sys.exit(main())
