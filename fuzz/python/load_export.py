"""Fuzz the Python package's `tilefit.load` with atheris: any bytes are an export it reads or a
`tilefit.BadExport` naming the file; a read export answers `config_for`/`entry_for` with a config,
a TilefitError, or the fallback. Any other exception (UnicodeDecodeError, RecursionError,
AttributeError, TypeError, KeyError) is a finding.

    python -m pip install atheris
    PYTHONPATH=python python fuzz/python/load_export.py fuzz/corpus/python_load -runs=1000000
"""

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    import tilefit

FOLDER = tempfile.mkdtemp(prefix="tilefit-fuzz-load-")
PATH = os.path.join(FOLDER, "export.json")


def one(data):
    with open(PATH, "wb") as f:
        f.write(data)
    try:
        choices = tilefit.load(PATH)
    except tilefit.BadExport as e:
        assert PATH in str(e), e
        return
    for arch in list(choices.by_arch)[:2] + ["sm_90", "gb10"]:
        for variant in (None, {"kv_dtype": "fp8e4nv"}):
            for fallback in ({}, {"fallback": {"x": 1}}):
                try:
                    choices.config_for(variant=variant, device=arch, **fallback)
                except tilefit.TilefitError:
                    pass


def main():
    atheris.Setup(sys.argv, one)
    try:
        atheris.Fuzz()
    finally:
        import shutil

        shutil.rmtree(FOLDER, ignore_errors=True)


if __name__ == "__main__":
    main()
