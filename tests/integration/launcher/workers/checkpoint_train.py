"""The checkpoint helper (kubedist.checkpoint) with real gloo DDP: trains STEPS steps of a small model, saving on the
helper's schedule (KUBEDIST_CHECKPOINT_EVERY_STEPS), after resuming from the newest complete checkpoint. Each rank
appends "start <step resumed from> <weights>" and, per step, "step <n>" to OUT_DIR/rank<N>.log, and at the end
writes OUT_DIR/rank<N>.json with the weights it trained to. FAIL_SAVE_AT=S makes rank 1's save of step S raise;
SLOW_SAVE_AT=S makes rank 1's save of step S take 2 s; CRASH_AT=S makes rank 1 exit 3 after step S (once: a file
OUT_DIR/crashed remembers it). STEP_SLEEP=S makes each step take S seconds more; while OUT_DIR/fail-saves exists,
rank 1's saves raise.

usage: checkpoint_train.py OUT_DIR STEPS
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from kubedist import checkpoint

out_dir, steps = sys.argv[1], int(sys.argv[2])
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
ddp = DistributedDataParallel(model)
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
log = open(os.path.join(out_dir, "rank%d.log" % rank), "a")


def save(path, step):
    if rank == 1 and os.environ.get("FAIL_SAVE_AT") == str(step):
        raise OSError("disk full (the test's)")
    if rank == 1 and os.path.exists(os.path.join(out_dir, "fail-saves")):
        raise OSError("the volume went read-only (the test's)")
    if rank == 1 and os.environ.get("SLOW_SAVE_AT") == str(step):
        time.sleep(2)
    torch.save({"model": model.state_dict(), "optim": optimizer.state_dict()}, os.path.join(path, "rank%d.pt" % rank))


def load(path, step):
    state = torch.load(os.path.join(path, "rank%d.pt" % rank))
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optim"])


def weights():
    return [round(v, 6) for p in model.parameters() for v in p.detach().flatten().tolist()]


start = checkpoint.resume(save=save, load=load)
log.write("start %d %s\n" % (start, json.dumps(weights())))
log.flush()
for i in range(start, steps):
    data = torch.Generator().manual_seed(1000 * (i + 1) + rank)  # the same batch for a step, whenever it runs
    x = torch.randn(16, 8, generator=data)
    loss = ((ddp(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    time.sleep(float(os.environ.get("STEP_SLEEP", "0")))
    log.write("step %d\n" % (i + 1))
    log.flush()
    checkpoint.step(i + 1)
    crashed = os.path.join(out_dir, "crashed")
    if rank == 1 and os.environ.get("CRASH_AT") == str(i + 1) and not os.path.exists(crashed):
        open(crashed, "w").close()
        sys.exit(3)
with open(os.path.join(out_dir, "rank%d.json" % rank), "w") as f:
    json.dump(weights(), f)
dist.destroy_process_group()
