"""A small DDP training job (gloo, CPU) for the launcher tests: trains a few steps and writes its final weights.

usage: ddp_train.py OUT_DIR STEPS [--crash-rank R] [--step-sleep S] [--grow-to W] [--report]
--crash-rank R: global rank R exits with code 13 at step 2 of the first attempt (TORCHELASTIC_RESTART_COUNT=0).
--grow-to W: while the world is smaller than W, keep training (until the launcher stops the group to grow it).
--report: every rank reports each step, the total and the loss with the launcher's helper (kubedist.progress).
Rank 0 writes OUT_DIR/progress (world size, restart count, step) as it goes; every rank writes OUT_DIR/rank<N>.json.
"""
import argparse
import gc
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

parser = argparse.ArgumentParser()
parser.add_argument("out_dir")
parser.add_argument("steps", type=int)
parser.add_argument("--crash-rank", type=int, default=-1)
parser.add_argument("--step-sleep", type=float, default=0.0)
parser.add_argument("--grow-to", type=int, default=0)
parser.add_argument("--report", action="store_true")
args = parser.parse_args()

restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
initial = [p.detach().clone().flatten().tolist() for p in model.parameters()]
ddp = DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
data = torch.Generator().manual_seed(1000 + rank)  # each rank sees different data; DDP keeps weights equal
# Waiting to grow: about 10 minutes at most (with --step-sleep 0.2), then the job fails rather than hang.
steps = args.steps if world >= args.grow_to else 3000
for step in range(steps):
    if rank == args.crash_rank and restart == 0 and step == 2:
        os._exit(13)
    x = torch.randn(16, 8, generator=data)
    loss = ((ddp(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if args.report:
        from kubedist import progress
        progress.step(step + 1, total=steps, loss=loss.item())
    if rank == 0:
        with open(os.path.join(args.out_dir, "progress"), "a") as f:
            f.write(f"{world} {restart} {step}\n")
    if args.step_sleep:
        time.sleep(args.step_sleep)

if world < args.grow_to:
    raise SystemExit(f"the world never grew from {world} to {args.grow_to}")
result = {
    "rank": rank,
    "world": world,
    "restart": restart,
    "initial": initial,
    "weights": [p.detach().flatten().tolist() for p in model.parameters()],
    # OMP_NUM_THREADS is set only where a node runs several workers (torchrun's rule): None when unset.
    "env": {k: os.environ.get(k) for k in ("LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE",
                                           "ROLE_RANK", "ROLE_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS",
                                           "MASTER_ADDR", "MASTER_PORT", "TEST_NODE")},
}
with open(os.path.join(args.out_dir, f"rank{rank}.json.tmp"), "w") as f:
    json.dump(result, f)
os.rename(os.path.join(args.out_dir, f"rank{rank}.json.tmp"), os.path.join(args.out_dir, f"rank{rank}.json"))
dist.barrier()
# DDP holds the process group (and so does the last loss's graph, through DDP's autograd hooks): released first,
# so that destroy_process_group joins gloo's threads before the interpreter finalizes (torch 2.15 on Python 3.11
# aborts a worker whose gloo thread frees a tensor after that).
ddp = loss = None  # (loss: unset when no step was left to run)
gc.collect()
dist.destroy_process_group()
