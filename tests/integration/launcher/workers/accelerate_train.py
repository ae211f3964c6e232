"""Hugging Face Accelerate on CPU (gloo), as a user writes it for torchrun: trains a few steps and writes, for its
rank, what Accelerate itself reports (processes, indices, distributed type, a gathered tensor).

usage: accelerate_train.py OUT_DIR
"""
import json
import os
import sys

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

out_dir = sys.argv[1]
accelerator = Accelerator(cpu=True)
torch.manual_seed(0)
x = torch.randn(256, 8)
data = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=16)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
model, optimizer, data = accelerator.prepare(model, optimizer, data)
steps = 0
for xb, yb in data:
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
    steps += 1
gathered = accelerator.gather(torch.tensor([accelerator.process_index])).tolist()
result = {
    "num_processes": accelerator.num_processes,
    "process_index": accelerator.process_index,
    "local_process_index": accelerator.local_process_index,
    "is_main_process": accelerator.is_main_process,
    "distributed_type": str(accelerator.distributed_type),
    "backend": accelerator.state.backend,
    "gathered": gathered,
    "steps": steps,
    "weights": [p.detach().flatten().tolist() for p in accelerator.unwrap_model(model).parameters()],
    "env": {k: os.environ[k] for k in ("RANK", "LOCAL_RANK")},
}
with open(os.path.join(out_dir, f"rank{accelerator.process_index}.json"), "w") as f:
    json.dump(result, f)
# The prepared DDP model holds the process group: released first (free_memory drops the Accelerator's references), so
# that end_training's destroy_process_group joins gloo's threads before the interpreter finalizes (torch 2.15 on
# Python 3.11 aborts a worker whose gloo thread frees a tensor after that).
del model, optimizer, data
accelerator.free_memory()
accelerator.end_training()
