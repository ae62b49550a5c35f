"""The worker package as tilefit embeds it (crates/tilefit-core/src/compile/worker/, the package
`tilefit_worker`; a test keeps the embedded list equal to the folder), imported for the
benchmarks that call the worker's functions directly: `load()` gives one namespace with every
module's names, as the benchmarks knew it when the worker was one script."""

import importlib
import os
import shutil
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "crates", "tilefit-core", "src", "compile", "worker")
MODULES = ("stand_ins", "kernel", "compiling", "launch", "errors", "zygote", "serve")


def load():
    """Every worker module imported (nothing served), their names in one namespace."""
    root = tempfile.mkdtemp(prefix="tilefit-bench-worker-")
    shutil.copytree(PACKAGE, os.path.join(root, "tilefit_worker"))
    sys.path.insert(0, root)
    try:
        namespace = types.SimpleNamespace()
        for name in MODULES:
            module = importlib.import_module(f"tilefit_worker.{name}")
            for key, value in vars(module).items():
                if not key.startswith("__"):
                    setattr(namespace, key, value)
        return namespace
    finally:
        sys.path.remove(root)
        shutil.rmtree(root, ignore_errors=True)
