"""DistributedDataParallel with each op of the package: a tiny model using the op trains the same in two processes,
each given half of every global batch, as in one. {% if cookiecutter.__cpu == 'True' %}gloo on the CPU, NCCL on two GPUs (skipped with fewer).{% else %}NCCL on two GPUs; skipped with fewer (the project
has no CPU kernels for gloo).{% endif %}

The test runs this file as a script in subprocesses, one process and then two under torchrun
(`python -m torch.distributed.run`), so the processes start clean of the test runner's state. By hand:

    torchrun --standalone --nproc_per_node 2 tests/test_ddp.py --op <op> --device cuda --out two.pt
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from support import CPU_IMPL, OP_NAMES, OPS, as_tuple, package, scalars

STEPS = 50
GLOBAL_BATCH = 8
FEATURES, HIDDEN, OUTPUTS = 12, 40, 5

requires_two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
DDP_DEVICES = [pytest.param("cuda", marks=requires_two_gpus)] + (["cpu"] if CPU_IMPL else [])


class TinyModel(torch.nn.Module):
    """A linear layer per input of the op, the op's module, the sum of its outputs, a linear layer."""

    def __init__(self, op_name: str) -> None:
        super().__init__()
        self.op = OPS[op_name]
        self.inp = torch.nn.ModuleList(torch.nn.Linear(FEATURES, HIDDEN) for _ in self.op.inputs)
        self.act = getattr(package, self.op.class_name)(**scalars(self.op))
        self.out = torch.nn.Linear(HIDDEN, OUTPUTS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inputs = []
        for layer, t in zip(self.inp, self.op.inputs, strict=True):
            h = layer(x)
            inputs.append(h if t.domain is None else torch.sigmoid(h) * (t.domain[1] - t.domain[0]) + t.domain[0])
        # A per-row output (rowwise ops) is spread over the row's features.
        outputs = [
            y.unsqueeze(-1).expand(*y.shape, HIDDEN) if y.dim() < x.dim() else y for y in as_tuple(self.act(*inputs))
        ]
        return self.out(torch.tanh(sum(outputs)))  # bounded, whatever the range of the op's outputs


def train(op_name: str, device_type: str, out: str) -> None:
    """Trains STEPS SGD steps on this rank's slice of each global batch; rank 0 saves the losses
    (averaged over the ranks) and the final parameters. The rank and the number of processes come
    from torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE); without it, one process trains."""
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(device_type, local_rank) if device_type == "cuda" else torch.device("cpu")
    if device_type == "cuda":
        torch.cuda.set_device(device)
    torch.set_num_threads(1)
    if world > 1:
        dist.init_process_group("nccl" if device_type == "cuda" else "gloo", timeout=datetime.timedelta(seconds=120))
    torch.manual_seed(0)
    model = TinyModel(op_name).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(STEPS, GLOBAL_BATCH, FEATURES, generator=generator)
    targets = torch.randn(STEPS, GLOBAL_BATCH, OUTPUTS, generator=generator)
    rows = slice(rank * GLOBAL_BATCH // world, (rank + 1) * GLOBAL_BATCH // world)
    losses = []
    for step in range(STEPS):
        loss = torch.nn.functional.mse_loss(ddp(inputs[step, rows].to(device)), targets[step, rows].to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss = loss.detach()
        if world > 1:
            dist.all_reduce(loss)
            loss /= world
        losses.append(loss.cpu())
    if rank == 0:
        torch.save({"losses": torch.stack(losses), **{k: v.cpu() for k, v in model.state_dict().items()}}, out)
    if world > 1:
        dist.barrier()  # no rank tears its process group down while another still uses it
        dist.destroy_process_group()
        # Leave without the interpreter's teardown: there, torch 2.15's gloo backend can abort a
        # process whose work is all done ("terminate called without an active exception").
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def run_training(op_name: str, world: int, device_type: str, out: Path) -> dict:
    project = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [project, os.environ.get("PYTHONPATH")])))
    # torchrun --standalone: a rendezvous on a free local port, one process per rank.
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}"] if world > 1 else []
    command = [sys.executable, *launcher, __file__, "--op", op_name, "--device", device_type, "--out", str(out)]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{world} process(es) failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    return torch.load(out)


@pytest.mark.parametrize("device_type", DDP_DEVICES)
@pytest.mark.parametrize("op_name", OP_NAMES)
def test_two_processes_train_like_one(tmp_path, op_name, device_type):
    one = run_training(op_name, 1, device_type, tmp_path / "one.pt")
    two = run_training(op_name, 2, device_type, tmp_path / "two.pt")
    assert one.keys() == two.keys()
    # The two runs differ only in the order the gradients are summed.
    torch.testing.assert_close(two["losses"], one["losses"], rtol=1e-5, atol=1e-6)
    for name in one:
        torch.testing.assert_close(two[name], one[name], rtol=1e-5, atol=1e-6, msg=name)
    torch.manual_seed(0)
    initial = TinyModel(op_name).state_dict()
    assert not torch.equal(one["inp.0.weight"], initial["inp.0.weight"]), "the parameters did not move"
    # Each step has its own random batch, so single steps' losses are noisy: compare ten of each end.
    assert one["losses"][-10:].mean() < one["losses"][:10].mean(), "the loss did not go down"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", required=True)
    parser.add_argument("--device", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    train(args.op, args.device, args.out)
