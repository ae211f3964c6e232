"""A main decorated with torch's @record, as torchrun's docs ask: rank FAIL_RANK raises; @record writes the
exception to TORCHELASTIC_ERROR_FILE, which the launcher must show as the root cause. The other ranks wait.

usage: record_main.py FAIL_RANK
"""
import os
import sys
import time

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    import torch.distributed as dist
    dist.init_process_group("gloo")
    if dist.get_rank() == int(sys.argv[1]):
        raise ValueError(f"batch 7 of rank {dist.get_rank()} has a NaN loss")
    time.sleep(300)


if __name__ == "__main__":
    main()
