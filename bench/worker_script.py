"""The worker package as tilefit embeds it (the package `tilefit_worker`), imported for the
benchmarks that call the worker's functions directly: `load()` gives one namespace with every
module's names, as the benchmarks knew it when the worker was one script.

The package comes from the binary being measured (`tilefit toolchain worker DIR`, the binary named
by TILEFIT_BIN), so the benchmark needs only the release binary, not the source tree. Without
TILEFIT_BIN it is taken from the source tree's folder (crates/tilefit-core/src/compile/worker/),
and where neither is there, it stops with the reason."""

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "crates", "tilefit-core", "src", "compile", "worker")
MODULES = ("stand_ins", "kernel", "compiling", "launch", "errors", "zygote", "serve")


def _write_package(root):
    """`root/tilefit_worker`: written by the binary TILEFIT_BIN names, or copied from the tree."""
    binary = os.environ.get("TILEFIT_BIN")
    if binary:
        done = subprocess.run(
            [binary, "toolchain", "worker", root], capture_output=True, text=True
        )
        if done.returncode != 0:
            sys.exit(
                f"{binary} toolchain worker {root} failed ({done.returncode}): {done.stderr.strip()}"
            )
        return
    if not os.path.isdir(PACKAGE):
        sys.exit(
            f"no worker package: TILEFIT_BIN is not set and {os.path.normpath(PACKAGE)} is not here; "
            "set TILEFIT_BIN to the tilefit binary being measured"
        )
    shutil.copytree(PACKAGE, os.path.join(root, "tilefit_worker"))


def load():
    """Every worker module imported (nothing served), their names in one namespace."""
    root = tempfile.mkdtemp(prefix="tilefit-bench-worker-")
    try:
        _write_package(root)
        sys.path.insert(0, root)
        namespace = types.SimpleNamespace()
        for name in MODULES:
            module = importlib.import_module(f"tilefit_worker.{name}")
            for key, value in vars(module).items():
                if not key.startswith("__"):
                    setattr(namespace, key, value)
        return namespace
    finally:
        if root in sys.path:
            sys.path.remove(root)
        shutil.rmtree(root, ignore_errors=True)
