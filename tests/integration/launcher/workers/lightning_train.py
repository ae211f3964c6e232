"""PyTorch Lightning's Trainer with strategy="ddp" on CPU, as a user writes it for torchrun: trains a few steps and
writes, for its rank, what Lightning itself reports (world size, ranks, cluster environment, a gathered tensor).

usage: lightning_train.py OUT_DIR DEVICES NUM_NODES [MAX_STEPS [STEP_SLEEP]]
"""
import gc
import json
import os
import sys
import time

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

out_dir, devices, num_nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
max_steps = int(sys.argv[4]) if len(sys.argv) > 4 else 6
step_sleep = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch, _):
        x, y = batch
        time.sleep(step_sleep)
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


torch.manual_seed(0)
x = torch.randn(256, 8)
data = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=16)
model = Regression()
trainer = L.Trainer(accelerator="cpu", devices=devices, num_nodes=num_nodes, strategy="ddp", max_steps=max_steps,
                    logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(model, data)
gathered = trainer.strategy.all_gather(torch.tensor([trainer.global_rank])).flatten().tolist()
result = {
    "world_size": trainer.world_size,
    "global_rank": trainer.global_rank,
    "local_rank": trainer.local_rank,
    "node_rank": trainer.node_rank,
    "cluster_environment": type(trainer.strategy.cluster_environment).__name__,
    "gathered": gathered,
    "global_step": trainer.global_step,
    "weights": [p.detach().flatten().tolist() for p in model.parameters()],
    "env": {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE")},
}
with open(os.path.join(out_dir, f"rank{trainer.global_rank}.json"), "w") as f:
    json.dump(result, f)
# The Trainer (its strategy's DDP-wrapped model) holds the process group: released first, and collected, so that
# destroy_process_group joins gloo's threads before the interpreter finalizes (torch 2.15 on Python 3.11 otherwise
# aborts 1 exit in 3 or so: "terminate called without an active exception"; docs/guides/troubleshooting.md).
del trainer, model, data
gc.collect()
if torch.distributed.is_initialized():
    torch.distributed.destroy_process_group()
