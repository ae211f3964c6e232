"""A DDP training job (gloo, CPU) that reports its progress with the launcher's helper (from kubedist import
progress), for the progress tests: hangs, stragglers and restarts on demand.

usage: progress_train.py OUT_DIR STEPS [--step-sleep S] [--hang-rank R --hang-step K] [--slow-rank R --slow-sleep S]
                         [--crash-rank R --crash-step K] [--flood N] [--bad-reports]
--hang-rank R: on the first attempt, global rank R waits at step K in a receive no rank ever sends to, while the
   others wait for it in the step's all_reduce: a hang inside collectives.
--slow-rank R: rank R spends --slow-sleep more seconds in each step's compute section (a throttled rank).
--crash-rank R: on the first attempt, rank R exits 13 at the start of step K, after writing the time to
   OUT_DIR/crash_time.
--flood N: every rank also sends N raw reports per step straight to the socket (a worker reporting far too often);
--bad-reports: and malformed and huge ones.
Every rank appends "attempt step time" lines to OUT_DIR/steps<RANK> as each step ends; every rank writes
OUT_DIR/rank<N>.json at the end.
"""
import argparse
import gc
import json
import os
import socket
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from kubedist import progress

parser = argparse.ArgumentParser()
parser.add_argument("out_dir")
parser.add_argument("steps", type=int)
parser.add_argument("--step-sleep", type=float, default=0.0)
parser.add_argument("--hang-rank", type=int, default=-1)
parser.add_argument("--hang-step", type=int, default=5)
parser.add_argument("--slow-rank", type=int, default=-1)
parser.add_argument("--slow-sleep", type=float, default=0.0)
parser.add_argument("--crash-rank", type=int, default=-1)
parser.add_argument("--crash-step", type=int, default=3)
parser.add_argument("--flood", type=int, default=0)
parser.add_argument("--bad-reports", action="store_true")
args = parser.parse_args()

restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
ddp = DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
data = torch.Generator().manual_seed(1000 + rank)

raw = None
if args.flood or args.bad_reports:
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    raw.setblocking(False)
    address = os.environ["KUBEDIST_PROGRESS"]
    address = "\0" + address[1:] if address.startswith("@") else address


def send_raw(data):
    try:
        raw.sendto(data, address)
    except OSError:
        pass  # the launcher's queue is full: the flood is its problem, not ours


log = open(os.path.join(args.out_dir, f"steps{rank}"), "a")
for step in range(1, args.steps + 1):
    if rank == args.crash_rank and restart == 0 and step == args.crash_step:
        with open(os.path.join(args.out_dir, "crash_time"), "w") as f:
            f.write(f"{time.time()}\n")
        os._exit(13)
    with progress.compute():
        x = torch.randn(16, 8, generator=data)
        loss = ((ddp(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
        if rank == args.slow_rank:
            time.sleep(args.slow_sleep)
    if rank == args.hang_rank and restart == 0 and step == args.hang_step:
        dist.recv(torch.zeros(1), src=(rank + 1) % world)  # nobody sends: stuck in a collective for good
    opt.zero_grad()
    loss.backward()  # DDP's all_reduce: the other ranks wait here for the stuck one
    opt.step()
    log.write(f"{restart} {step} {time.time()}\n")
    log.flush()
    progress.step(step, total=args.steps, epoch=0, loss=loss.item())
    # The bad reports go before the flood: the launcher cuts a flood before it parses, so bad reports sent after
    # one would only ever be dropped, never judged.
    if args.bad_reports:
        for bad in (b"not json", b"{\"step\": -1}", b"[1,2]", b"{\"loss\": 1}", b"x" * 70000):
            send_raw(bad)
    for _ in range(args.flood):
        send_raw(json.dumps({"step": step}).encode())
    if args.step_sleep:
        time.sleep(args.step_sleep)

with open(os.path.join(args.out_dir, f"rank{rank}.json"), "w") as f:
    json.dump({"rank": rank, "world": world, "restart": restart,
               "weights": [p.detach().flatten().tolist() for p in model.parameters()]}, f)
dist.barrier()
# DDP holds the process group (and so does the last loss's graph, through DDP's autograd hooks): released first,
# so that destroy_process_group joins gloo's threads before the interpreter finalizes (torch 2.15 on Python 3.11
# aborts a worker whose gloo thread frees a tensor after that).
ddp = loss = None  # (loss: unset when no step was left to run)
gc.collect()
dist.destroy_process_group()
