"""Run by Python at start-up in every worker the kubedist launcher starts (its helper directory is on PYTHONPATH): it
first runs the sitecustomize this file hides, if the interpreter has one (Debian's, a conda image's), then, unless
KUBEDIST_AUTO_CALLBACKS=0, arranges that transformers' Trainer reports progress to the launcher with no change to
the script (kubedist/transformers.py). It costs one entry in sys.meta_path, looked at once per module import, and
imports nothing else until transformers.trainer is imported. It never raises: a failure here only means no
automatic callback."""
import os
import sys


def _run_hidden_sitecustomize():
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


class _TrainerHook:
    """A meta path finder that lets the real finders load transformers.trainer, then adds the callback."""

    target = "transformers.trainer"

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.target:
            return None
        import importlib.machinery
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module):
            original(module)
            try:
                from kubedist.transformers import add_to_defaults
                add_to_defaults(module)
            except Exception:
                pass
        loader.exec_module = exec_module
        sys.meta_path.remove(self)  # once
        return spec


try:
    _run_hidden_sitecustomize()
except Exception:
    pass
if os.environ.get("KUBEDIST_PROGRESS") and os.environ.get("KUBEDIST_AUTO_CALLBACKS", "1") not in ("0", "false", "False"):
    sys.meta_path.insert(0, _TrainerHook())
