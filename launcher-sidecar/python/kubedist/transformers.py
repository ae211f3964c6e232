"""Progress for Hugging Face transformers: a Trainer callback that reports each optimizer step to the kubedist launcher
(progress and ETA in `kubectl get tj`, hangs and stragglers), so a script that trains with transformers' Trainer
needs no progress.step() of its own.

Under the kubedist launcher nothing is needed: the launcher's sitecustomize adds this callback to transformers'
default callbacks when the script imports transformers' Trainer (transformers has no way of its own to switch a
callback on from the environment). To add it by hand (outside the launcher it does nothing):

    from kubedist.transformers import KubedistProgress
    trainer = Trainer(..., callbacks=[KubedistProgress()])

KUBEDIST_AUTO_CALLBACKS=0 in the workers' environment turns the automatic one off. One instance per Trainer reports:
a second one (added by hand beside the automatic one) stays silent. transformers has no event between a step's
forward and backward passes, so a rank's step time is the time between its steps (see kubedist.progress on
stragglers).
"""
from kubedist import progress
from kubedist.progress import _number as _scalar  # a finite float, or None

__all__ = ["KubedistProgress"]

_owners = {}  # id(TrainerState) -> the instance that reports for that Trainer


_class = None


def _make():
    global _class
    if _class is not None:
        return _class
    from transformers import TrainerCallback

    class KubedistProgress(TrainerCallback):
        """Reports state.global_step of state.max_steps, the epoch and the last logged scalars (loss,
        learning_rate, grad_norm...)."""

        def __init__(self):
            self._metrics = {}

        def _reports(self, state):
            if not progress.enabled():
                return False
            return _owners.setdefault(id(state), self) is self

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and self._reports(state):
                metrics = {}
                for name, value in logs.items():
                    v = _scalar(value)
                    if v is not None and str(name).isidentifier() and name not in ("epoch", "step", "total_flos"):
                        metrics[name] = v
                self._metrics = metrics

        def on_step_end(self, args, state, control, **kwargs):
            if not self._reports(state):
                return
            try:
                total = state.max_steps if state.max_steps and state.max_steps > 0 else None
                epoch = int(state.epoch) if state.epoch is not None else None
                progress.step(state.global_step, total=total, epoch=epoch, **self._metrics)
            except Exception:
                pass  # never into the training loop

        def on_train_end(self, args, state, control, **kwargs):
            _owners.pop(id(state), None)

    KubedistProgress.__module__ = __name__
    KubedistProgress.__qualname__ = "KubedistProgress"
    _class = KubedistProgress
    return _class


def __getattr__(name):
    # Built on first use: importing kubedist.transformers imports no transformers until the class is asked for.
    if name == "KubedistProgress":
        return _make()
    raise AttributeError(name)


def add_to_defaults(trainer_module):
    """Appends the callback to transformers.trainer's DEFAULT_CALLBACKS (the launcher's sitecustomize calls this
    once that module is imported)."""
    defaults = getattr(trainer_module, "DEFAULT_CALLBACKS", None)
    if isinstance(defaults, list):
        cls = _make()
        if cls not in defaults:
            defaults.append(cls)
