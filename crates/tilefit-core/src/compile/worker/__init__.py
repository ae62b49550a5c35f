"""tilefit's compile worker, as one package: JSON lines in on stdin, JSON lines out on stdout
(`protocol` says how). tilefit writes the package into its run's scratch folder and starts it
with `python -I -B -u -c "...; from tilefit_worker.serve import serve; serve()"`.

Its modules import only from those listed before them:

- `_jit`: the walk from a kernel's wrappers down to its `JITFunction` (the `tilefit` package's
  own `_jit.py`, shared);
- `extract`: a kernel from its source file without running the file;
- `protocol`: the handshake's version, the protocol's stdout, reading and writing lines;
- `stand_ins`: Triton's import, torch stood in, stand-in tensors, diagnostics, job errors, the
  handshake;
- `kernel`: loading a kernel and inspecting its parameters;
- `compiling`: compiling through the JIT's own specialization, the early stop, binaries;
- `launch`: one launch on the local GPU (`tilefit verify --launch`);
- `errors`: what a failed compile was, and a reply's error fields;
- `zygote`: the fork server;
- `serve`: one request in, one reply out; the serve loop.
"""
