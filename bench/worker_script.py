"""The worker script as tilefit embeds it: python/tilefit/_jit.py, then the parts of
crates/tilefit-core/src/compile/worker/, in the order of their names (the Rust side lists the same order, and a test checks it), loaded as
a module for the benchmarks that call the worker's functions directly."""

import glob
import os
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = os.path.join(HERE, "..", "crates", "tilefit-core", "src", "compile", "worker")


def source():
    """The whole script."""
    shared = [os.path.join(HERE, "..", "python", "tilefit", "_jit.py")]
    parts = shared + sorted(glob.glob(os.path.join(PARTS, "*.py")))
    return "".join(open(p, encoding="utf-8").read() for p in parts)


def load():
    """The script as a module named `tilefit_worker`: its functions defined, serve() not run."""
    module = types.ModuleType("tilefit_worker")
    module.__file__ = os.path.join(PARTS, "worker.py")
    exec(compile(source(), module.__file__, "exec"), module.__dict__)  # noqa: S102 (our own worker, as tilefit runs it)
    return module
