"""A torch 1.x torch.distributed.launch script as users wrote them: it declares only --local_rank (argparse refuses
any other spelling), checks it against LOCAL_RANK, then trains as ddp_train.py does (same arguments after it)."""
import argparse
import os
import runpy
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, required=True)
args, rest = parser.parse_known_args()
assert args.local_rank == int(os.environ["LOCAL_RANK"]), (args.local_rank, os.environ["LOCAL_RANK"])
train = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_train.py")
sys.argv = [train] + rest
runpy.run_path(train, run_name="__main__")
