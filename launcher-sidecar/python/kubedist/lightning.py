"""Progress for PyTorch Lightning: a Trainer callback that reports each optimizer step to the kubedist launcher
(progress and ETA in `kubectl get tj`, hangs and stragglers), so a Lightning script needs no progress.step() of its
own.

Under the kubedist launcher nothing is needed: the launcher's helper directory declares this callback to Lightning
as an external callback (Lightning's entry point group lightning.pytorch.callbacks_factory, and
pytorch_lightning.callbacks_factory for the older package name), so every Trainer it starts reports. To add it by
hand (a Trainer outside the launcher does nothing with it):

    from kubedist.lightning import KubedistProgress
    trainer = L.Trainer(..., callbacks=[KubedistProgress()])

KUBEDIST_AUTO_CALLBACKS=0 in the workers' environment turns the automatic one off. One instance per Trainer reports:
a second one (added by hand beside the automatic one) stays silent.
"""
from kubedist import progress

__all__ = ["KubedistProgress"]


def _callback_base(package):
    if package == "pytorch_lightning":
        from pytorch_lightning.callbacks import Callback
    else:
        from lightning.pytorch.callbacks import Callback
    return Callback


def _scalar(value):
    """A finite float of a number or a one-element tensor, else None."""
    try:
        if hasattr(value, "numel") and value.numel() != 1:
            return None
        return progress._number(value.item() if hasattr(value, "item") else value)
    except Exception:
        return None


_classes = {}


def _make(package):
    if package in _classes:
        return _classes[package]

    class KubedistProgress(_callback_base(package)):
        """Reports trainer.global_step of trainer.max_steps (else the estimated steps of all epochs), the epoch,
        the step's loss and the logged scalars; the time of each training_step (forward and loss, before the
        backward pass that waits for the other ranks) is this rank's step time."""

        def __init__(self):
            self._active = True
            self._compute = None

        def on_fit_start(self, trainer, pl_module):
            mine = [cb for cb in trainer.callbacks if type(cb).__name__ == "KubedistProgress"
                    and type(cb).__module__ == __name__]
            self._active = progress.enabled() and bool(mine) and mine[0] is self

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if self._active:
                self._compute = progress.compute()
                self._compute.__enter__()

        def on_before_backward(self, trainer, pl_module, loss):
            if self._compute is not None:
                self._compute.__exit__(None, None, None)
                self._compute = None

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if not self._active:
                return
            try:
                if self._compute is not None:  # manual optimization: no on_before_backward
                    self._compute.__exit__(None, None, None)
                    self._compute = None
                metrics = {}
                loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
                loss = _scalar(loss) if loss is not None else None
                if loss is not None:
                    metrics["loss"] = loss
                for name, value in trainer.callback_metrics.items():
                    v = _scalar(value)
                    if v is not None and name not in metrics and name.isidentifier():
                        metrics[name] = v
                total = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None
                if total is None:
                    estimated = trainer.estimated_stepping_batches
                    total = int(estimated) if estimated != float("inf") else None
                progress.step(trainer.global_step, total=total, epoch=trainer.current_epoch, **metrics)
            except Exception:
                pass  # never into the training loop

    KubedistProgress.__module__ = __name__
    KubedistProgress.__qualname__ = "KubedistProgress"
    _classes[package] = KubedistProgress
    return KubedistProgress


def __getattr__(name):
    # Built on first use: importing kubedist.lightning imports no Lightning until the class is asked for.
    if name == "KubedistProgress":
        try:
            cls = _make("lightning")
        except ImportError:
            cls = _make("pytorch_lightning")
        globals()[name] = cls
        return cls
    raise AttributeError(name)


def _auto_enabled():
    import os
    return progress.enabled() and os.environ.get("KUBEDIST_AUTO_CALLBACKS", "1") not in ("0", "false", "False", "")


def lightning_callbacks():
    """lightning.pytorch.callbacks_factory: the automatic callback, under a launcher only."""
    return [_make("lightning")()] if _auto_enabled() else []


def pytorch_lightning_callbacks():
    """pytorch_lightning.callbacks_factory: the same for the older package name."""
    return [_make("pytorch_lightning")()] if _auto_enabled() else []
