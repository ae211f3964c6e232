"""A CPU-only distributed training example for kubedist: DDP over gloo, a small MLP on synthetic data.

Run as a TrainingJob (trainingjob.yaml beside this file: 2 nodes x 2 worker processes) or by hand under the
launcher, one launcher per node (here two on one machine):

  kubedist-launcher --nnodes=2 --node-rank=0 --nproc-per-node=2 --master-addr=127.0.0.1 train.py &
  kubedist-launcher --nnodes=2 --node-rank=1 --nproc-per-node=2 --master-addr=127.0.0.1 train.py

Every rank prints one start line (RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK, host name, MASTER_ADDR), so that
`kubectl logs JOB-node-0` shows which ranks run where; rank 0 prints the mean loss of each epoch and finally
`training finished: ...` (with the version of torch that trained).

Progress: every rank reports each step to its launcher with kubedist's helper (`from kubedist import progress`,
which the launcher puts on every worker's PYTHONPATH), so `kubectl get tj` shows PROGRESS and ETA, and with
spec.hangTimeout a group that stops advancing is restarted in place. The forward pass is timed as the rank's own
work (`progress.compute()`), so that a rank slower than the others is named (Event Straggler). Outside the
launcher the reports do nothing.

Checkpoints: with spec.checkpoint (KUBEDIST_CHECKPOINT_DIR, set by the operator where it mounts the claim) the
example saves through kubedist's checkpoint helper (`from kubedist import checkpoint`) every
spec.checkpoint.everySteps steps (rank 0 writes the model and optimizer, which DDP keeps the same on every rank), and
every start of the workers, an in-place restart included, resumes from the newest complete checkpoint: the steps
before it are not trained again. Without it, nothing is saved and every start trains from step 0.

Fault injection, to watch an in-place restart: `--crash-once-at-step N` (or env KUBEDIST_EXAMPLE_CRASH_ONCE_AT_STEP=N)
makes global rank 1 exit with code 3 at step N (counted over all epochs). It does so once per container: it leaves
a marker file in the temporary directory ($TMPDIR, else /tmp) named after the run id, so the restarted worker
group (TORCHELASTIC_RESTART_COUNT=1) trains to the end. Needs maxRestarts >= 1 and restartPolicy OnFailure (under
ExitCode, exit code 3 would end the job).

For timing the path around training (tests/bench/e2e/vs_kubeflow.py runs this script under both kubedist and
Kubeflow's torchrun): `--log-steps` makes rank 0 print `step N` after each step, and `--step-time S` makes each step
last at least S seconds (the rest slept), as a heavier model's would.

To watch a hang being caught: `--hang-once-at-step N` (or env KUBEDIST_EXAMPLE_HANG_ONCE_AT_STEP=N) makes global rank
1 wait at step N, once per container, in a receive that no rank sends to, while the others wait for it in the step's
all_reduce. With spec.hangTimeout set, the launchers take the ranks' Python stacks after that long without a step,
name rank 1 stuck in recv in status.lastFailure and an Event HangDetected, and restart the group in place.
"""
import argparse
import os
import socket
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

try:
    from kubedist import progress  # the kubedist launcher's helper, on every worker's PYTHONPATH
except ImportError:  # run by another launcher: report nowhere
    class progress:  # noqa: N801
        @staticmethod
        def step(*args, **kwargs):
            pass

        @staticmethod
        def compute():
            import contextlib
            return contextlib.nullcontext()

try:
    from kubedist import checkpoint  # saves and resumes where spec.checkpoint says (KUBEDIST_CHECKPOINT_DIR)
except ImportError:  # run by another launcher: no checkpoints
    class checkpoint:  # noqa: N801
        @staticmethod
        def resume(save, load):
            return 0

        @staticmethod
        def step(n):
            return False

CRASH_EXIT_CODE = 3


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--samples", type=int, default=2048, help="synthetic training samples")
    p.add_argument("--batch-size", type=int, default=32, help="per worker")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--crash-once-at-step", type=int,
                   default=int(os.environ.get("KUBEDIST_EXAMPLE_CRASH_ONCE_AT_STEP", "-1")),
                   help="rank 1 exits with code 3 at this global step, once per container (-1: never)")
    p.add_argument("--hang-once-at-step", type=int,
                   default=int(os.environ.get("KUBEDIST_EXAMPLE_HANG_ONCE_AT_STEP", "-1")),
                   help="rank 1 hangs in a collective at this global step, once per container (-1: never)")
    p.add_argument("--log-steps", action="store_true", help="rank 0 prints 'step N' after each step")
    p.add_argument("--step-time", type=float, default=0.0, help="each step lasts at least this many seconds")
    return p.parse_args()


def synthetic_data(samples):
    """The same data on every rank: inputs and the labels of a fixed random teacher network."""
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(samples, 16, generator=g)
    teacher = torch.randn(16, 4, generator=g)
    y = (x @ teacher).argmax(dim=1)
    return TensorDataset(x, y)


def marker(what):
    """A file that says this container already injected `what` (crashed, hung) once."""
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "none")
    return os.path.join(tempfile.gettempdir(), f"kubedist-example-{what}-{run_id}")


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    # One write, newline included: the workers run unbuffered (python -u, as torchrun starts them), where print()
    # writes its text and its newline apart, so that two ranks printing at once could run their lines together.
    sys.stdout.write(f"start: RANK={rank} LOCAL_RANK={os.environ.get('LOCAL_RANK')} WORLD_SIZE={world} "
                     f"GROUP_RANK={os.environ.get('GROUP_RANK')} hostname={socket.gethostname()} "
                     f"MASTER_ADDR={os.environ.get('MASTER_ADDR')} restart={restart}\n")
    sys.stdout.flush()

    torch.manual_seed(0)  # the same initial weights everywhere (DDP broadcasts rank 0's anyway)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    dataset = synthetic_data(args.samples)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    loss_fn = torch.nn.CrossEntropyLoss()

    def save(path, at_step):  # DDP keeps the replicas equal: rank 0's copy is everyone's
        if rank == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, os.path.join(path, "state.pt"))

    def load(path, at_step):
        state = torch.load(os.path.join(path, "state.pt"))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])

    step = checkpoint.resume(save=save, load=load)  # 0 without a checkpoint
    total_steps = args.epochs * len(loader)
    epoch_loss = torch.zeros(1)
    for epoch in range(step // len(loader), args.epochs):
        sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every rank
        total, batches = 0.0, 0
        for i, (x, y) in enumerate(loader):
            if epoch * len(loader) + i < step:
                continue  # trained before the checkpoint resumed from
            started = time.monotonic()
            if rank == 1 and step == args.crash_once_at_step and not os.path.exists(marker("crashed")):
                open(marker("crashed"), "w").close()
                print(f"rank 1: injected crash at step {step} (exit code {CRASH_EXIT_CODE}); "
                      f"the launcher restarts the worker group in place", flush=True)
                os._exit(CRASH_EXIT_CODE)
            with progress.compute():  # this rank's own work; the all_reduce in backward waits for the others
                loss = loss_fn(model(x), y)
            if rank == 1 and step == args.hang_once_at_step and not os.path.exists(marker("hung")):
                open(marker("hung"), "w").close()
                print(f"rank 1: injected hang at step {step}: waiting for a message nobody sends", flush=True)
                dist.recv(torch.zeros(1), src=0)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
            if args.step_time > 0:
                time.sleep(max(0.0, args.step_time - (time.monotonic() - started)))
            step += 1
            if args.log_steps and rank == 0:
                print(f"step {step}", flush=True)
            progress.step(step, total=total_steps, epoch=epoch, loss=loss.item())
            checkpoint.step(step)
        epoch_loss[0] = total / max(batches, 1)
        dist.all_reduce(epoch_loss)
        epoch_loss /= world
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: loss {epoch_loss.item():.4f}", flush=True)

    if rank == 0:
        print(f"training finished: {args.epochs} epochs, {step} steps per rank, world size {world}, "
              f"final loss {epoch_loss.item():.4f}, restarts {restart}, "
              f"torch {torch.__version__.split('+')[0]}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
