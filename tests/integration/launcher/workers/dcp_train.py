"""torch.distributed.checkpoint across ranks: `save` trains a DDP model a few steps and saves model, optimizer and
step with dcp.save; `load` builds a fresh model (other initial weights), loads the checkpoint with dcp.load and
writes what it loaded. Each rank writes OUT_DIR/<phase>-rank<N>.json with the weights it saved or loaded.

usage: dcp_train.py save|load CHECKPOINT_DIR OUT_DIR
"""
import gc
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel

phase, checkpoint, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0 if phase == "save" else 12345)
model = torch.nn.Linear(8, 1)
ddp = DistributedDataParallel(model)
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
step = torch.tensor(0)


def train(n):
    data = torch.Generator().manual_seed(1000 + rank)
    for _ in range(n):
        x = torch.randn(16, 8, generator=data)
        loss = ((ddp(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step.add_(1)


def weights():
    return [p.detach().flatten().tolist() for p in model.parameters()]


def state_of():
    """The app state as torch.distributed.checkpoint's docs write it: model and optimizer through get_state_dict."""
    model_state, optimizer_state = get_state_dict(ddp, optimizer)
    return {"model": model_state, "optimizer": optimizer_state, "step": step}


if phase == "save":
    train(3)
    dcp.save(state_of(), checkpoint_id=checkpoint)
    record = {"weights": weights(), "step": int(step)}
else:
    initial = weights()
    train(1)  # the optimizer's state exists (momentum buffers) before it is loaded over
    state = state_of()
    dcp.load(state, checkpoint_id=checkpoint)
    set_state_dict(ddp, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    record = {"initial": initial, "weights": weights(), "step": int(step)}
with open(os.path.join(out_dir, f"{phase}-rank{rank}.json"), "w") as f:
    json.dump(record, f)
# DDP holds the process group (and so does the last loss's graph, through DDP's autograd hooks): released first,
# so that destroy_process_group joins gloo's threads before the interpreter finalizes (torch 2.15 on Python 3.11
# aborts a worker whose gloo thread frees a tensor after that).
del ddp, optimizer
gc.collect()
dist.destroy_process_group()
