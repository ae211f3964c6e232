"""Hugging Face transformers' Trainer on CPU (gloo DDP), as a user writes it for torchrun, with no callback of its
own: a small regression model, MAX_STEPS steps of STEP_SLEEP seconds each at least. Each rank writes
OUT_DIR/rank<N>.json with what the Trainer reports (world size, process index, global step, loss).

usage: hf_train.py OUT_DIR MAX_STEPS STEP_SLEEP
"""
import gc
import json
import os
import sys
import time

import torch
from transformers import Trainer, TrainingArguments

out_dir, max_steps, step_sleep = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])


class Regression(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def forward(self, x, labels=None):
        time.sleep(step_sleep)
        out = self.layer(x)
        return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}


class Samples(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(4096, 8, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.x[i].sum(dim=0, keepdim=True)}


torch.manual_seed(0)
args = TrainingArguments(output_dir=os.path.join(out_dir, "hf"), max_steps=max_steps, per_device_train_batch_size=8,
                         learning_rate=0.01, logging_steps=1, report_to="none", save_strategy="no", use_cpu=True,
                         ddp_backend="gloo", disable_tqdm=True)
trainer = Trainer(model=Regression(), args=args, train_dataset=Samples())
result = trainer.train()
with open(os.path.join(out_dir, f"rank{args.process_index}.json"), "w") as f:
    json.dump({"world_size": args.world_size, "process_index": args.process_index, "global_step": result.global_step,
               "loss": result.training_loss,
               "callbacks": [type(c).__name__ for c in trainer.callback_handler.callbacks]}, f)
# The Trainer holds the DDP model, which holds the process group: released first (gc for the Trainer's cycles), so
# that destroy_process_group joins gloo's threads before the interpreter finalizes (torch 2.15 on Python 3.11
# aborts a worker whose gloo thread frees a tensor after that: "terminate called without an active exception").
del trainer
gc.collect()
torch.distributed.destroy_process_group()
