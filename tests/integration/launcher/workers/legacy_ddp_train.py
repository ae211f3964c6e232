"""A torch.distributed.launch script as users wrote them for the torch they had: it declares only the spelling its
torch's launch passes (--local_rank for torch 1.x, --local-rank for 2.x; argparse refuses any other), checks it
against LOCAL_RANK, then trains as ddp_train.py does (same arguments after it)."""
import argparse
import importlib.metadata
import os
import runpy
import sys

torch_major = int(importlib.metadata.version("torch").split(".")[0])
parser = argparse.ArgumentParser()
parser.add_argument("--local_rank" if torch_major < 2 else "--local-rank", dest="local_rank", type=int, required=True)
args, rest = parser.parse_known_args()
assert args.local_rank == int(os.environ["LOCAL_RANK"]), (args.local_rank, os.environ["LOCAL_RANK"])
train = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_train.py")
sys.argv = [train] + rest
runpy.run_path(train, run_name="__main__")
