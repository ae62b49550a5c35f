#!/usr/bin/env python3
"""Make an AOTInductor package whose one Triton template GEMM asks 131,072 bytes of dynamic shared
memory, as pytorch/executorch#21827's `sm80+ptx` artifact does (its
`triton_tem_fused__unsafe_view_gelu_mm_t_view_28` fails `cuFuncSetAttribute` on an RTX 5090,
whose opt-in limit is 101,376), then judge it with `tilefit replay model.pt2`. Needs a CUDA GPU
(Inductor runs each kernel while it compiles), torch 2.11 and Triton 3.6; no network.

    python examples/aoti/make_package.py --variant pt2 --arch 80 --out /tmp/aoti
    tilefit replay /tmp/aoti/pt2_sm80/model.pt2 --targets a100,h100,rtx-5090,rtx-pro-6000

Variants: `pt2` (one `.fatbin` per kernel in the package: sm_80 SASS and compute_80 PTX),
`embed` (ExecuTorch's options: the fatbins linked into the `.so`), `cpp_only` (a CMake project
with one `.ptx` per kernel), `cubin` (AOTInductor's defaults: an sm_80 `.cubin`, SASS only).

What it forces, all in this process (TORCHINDUCTOR_COMPILE_THREADS=1):
- only Triton templates for GEMMs, with one mm config (BaseConfigHeuristic.get_mm_configs
  patched): 128x128x64, 8 warps, 5 stages below sm_90 (Triton 3.6's Ampere pipeliner allocates
  num_stages - 1 buffers: (128*64 + 64*128) * 2 B * 4 = 131,072) or 4 from sm_90 on;
- `--arch 80` on another GPU: Triton compiles for sm_80 (CudaInterface.get_compute_capability and
  DeviceProperties report 80; config.cuda.arch = "80" for nvcc's gencode). While Inductor runs
  the kernels there, CompiledKernel._init_handles loads their sm_80 PTX (the driver JITs it); the
  package holds what an A100's export would.

`tests/fixtures/aoti/gemm_gelu_sm80.pt2` is this script's `pt2` variant, made on an H100 (nvcc
13 from /usr/local/cuda), with its `.so` (the weights) left out. Loading the package back on the
H100 (the last step) crashed that machine's Python in `aoti_load_package`; `--no-run` skips it.
"""

import argparse
import glob
import json
import os
import shutil
import time
import zipfile

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True, help="folder for <variant>_sm<arch>/")
ap.add_argument(
    "--variant", choices=["pt2", "embed", "cpp_only", "cubin"], default="pt2"
)
ap.add_argument(
    "--arch",
    type=int,
    default=80,
    help="Triton/fatbin target sm (80); 0 = this GPU's own",
)
ap.add_argument("--block", default="128,128,64", help="BLOCK_M,BLOCK_N,BLOCK_K")
ap.add_argument(
    "--stages", type=int, default=None, help="default: 5 below sm_90, 4 at sm_90+"
)
ap.add_argument("--warps", type=int, default=8)
ap.add_argument("--group-m", type=int, default=8)
ap.add_argument(
    "--shape", default="1,512,1024,2048", help="B,S,D_in,D_out of x@W.T+gelu"
)
ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
ap.add_argument(
    "--no-run", action="store_true", help="skip loading and running the package"
)
args = ap.parse_args()

out = os.path.abspath(
    os.path.join(args.out, f"{args.variant}_sm{args.arch or 'native'}")
)
if os.path.exists(out):
    shutil.rmtree(out)
os.makedirs(out)
notes = []


def note(msg):
    notes.append(msg)
    print(f"[make_package] {msg}", flush=True)


# --------------------------------------------------------------------------- environment
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(out, "inductor_cache")
os.environ["TRITON_CACHE_DIR"] = os.path.join(out, "triton_cache")
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"


def find_nvcc():
    for cand in (
        os.environ.get("CUDACXX"),
        os.path.join(os.environ.get("CUDA_HOME", "") or "/nonexistent", "bin", "nvcc"),
        shutil.which("nvcc"),
        "/usr/local/cuda/bin/nvcc",
    ):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


nvcc = find_nvcc()
toolkit_home = os.environ.get("CUDA_HOME") or (
    os.path.dirname(os.path.dirname(nvcc)) if nvcc else None
)
if not toolkit_home and os.path.isdir("/usr/local/cuda/include"):
    toolkit_home = "/usr/local/cuda"
if toolkit_home and os.path.isfile(os.path.join(toolkit_home, "include", "cuda.h")):
    os.environ.setdefault("CUDA_HOME", toolkit_home)
    note(f"CUDA toolkit: {toolkit_home} (nvcc: {nvcc})")
else:
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    cands = (
        [os.path.join(p, "cu13") for p in (spec.submodule_search_locations or [])]
        if spec
        else []
    )
    cands += (
        [
            os.path.join(p, "cuda_runtime")
            for p in (spec.submodule_search_locations or [])
        ]
        if spec
        else []
    )
    wheel_home = next(
        (c for c in cands if os.path.isfile(os.path.join(c, "include", "cuda.h"))), None
    )
    if wheel_home:
        os.environ["CUDA_HOME"] = wheel_home
        note(f"no CUDA toolkit found; CUDA_HOME={wheel_home} (pip wheel headers/libs)")
    else:
        note(
            "no CUDA toolkit and no pip nvidia/cu13 headers: the C++ build will likely fail "
            "(use --variant cpp_only)"
        )

import torch  # noqa: E402  (after the environment above)
import triton  # noqa: E402

assert torch.cuda.is_available(), "needs a CUDA GPU"
dev_cc = torch.cuda.get_device_capability()
dev_props = torch.cuda.get_device_properties(0)
note(
    f"torch {torch.__version__} (CUDA {torch.version.cuda}), triton {triton.__version__}, "
    f"device {dev_props.name} sm_{dev_cc[0]}{dev_cc[1]}, opt-in smem/block "
    f"{getattr(dev_props, 'shared_memory_per_block_optin', '?')}"
)
arch = args.arch or dev_cc[0] * 10 + dev_cc[1]
stages = args.stages or (5 if arch < 90 else 4)
bm, bn, bk = (int(v) for v in args.block.split(","))
itemsize = 2
expected = (bm * bk + bk * bn) * itemsize * (stages - 1 if arch < 90 else stages)
note(
    f"target sm_{arch}; mm config BLOCK {bm}x{bn}x{bk} num_stages={stages} num_warps={args.warps}; "
    f"expected Triton 3.6 shared = {expected} bytes"
)

# libcuda.so for `-lcuda` when only libcuda.so.1 (the driver) exists
if not any(
    os.path.exists(os.path.join(d, "libcuda.so"))
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/local/cuda/lib64/stubs",
        os.path.join(os.environ.get("CUDA_HOME", "/x"), "lib64", "stubs"),
        os.path.join(os.environ.get("CUDA_HOME", "/x"), "lib", "stubs"),
    ]
):
    torch.zeros(1, device="cuda")
    maps = open("/proc/self/maps").read().split()
    so1 = next(
        (p for p in maps if p.endswith("libcuda.so.1") or "libcuda.so." in p), None
    )
    if so1:
        d = os.path.join(out, "_libcuda")
        os.makedirs(d, exist_ok=True)
        os.symlink(so1, os.path.join(d, "libcuda.so"))
        os.environ["LIBRARY_PATH"] = d + os.pathsep + os.environ.get("LIBRARY_PATH", "")
        note(f"made {d}/libcuda.so -> {so1} for -lcuda")

from torch._inductor import config as ic  # noqa: E402
from torch._inductor.template_heuristics import triton as th  # noqa: E402

# --------------------------------------------------------------------------- one mm config
ONE = [th.GemmConfig(bm, bn, bk, stages, args.warps, group_m=args.group_m)]


def _one_config(self):
    from functools import partial

    return partial(self.preprocess_mm_configs, configs=list(ONE))


th.BaseConfigHeuristic.get_mm_configs = _one_config
th.BaseConfigHeuristic.get_exhaustive_mm_configs = _one_config
ic.max_autotune_gemm_search_space = "DEFAULT"

# --------------------------------------------------------------------------- forced arch
if arch != dev_cc[0] * 10 + dev_cc[1]:
    from torch._dynamo import device_interface as di
    from triton.compiler import compiler as tc

    di.CudaInterface.get_compute_capability = staticmethod(lambda device=None: arch)
    from torch._inductor.runtime import hints

    _orig_create = hints.DeviceProperties.create  # functools.cache'd classmethod, bound

    def _create(device):
        p = _orig_create(device)
        return p._replace(cc=arch, major=arch // 10) if p.type == "cuda" else p

    hints.DeviceProperties.create = staticmethod(_create)
    ic.cuda.arch = str(arch)
    ic.use_static_cuda_launcher = False
    orig_init_handles = tc.CompiledKernel._init_handles
    jit_loads = []

    def _init_handles(self):
        if self.module is not None:
            return
        target = getattr(self.metadata, "target", None)
        if (
            target is not None
            and getattr(target, "arch", arch) != dev_cc[0] * 10 + dev_cc[1]
            and "ptx" in self.asm
        ):
            real = self.kernel
            self.kernel = self.asm["ptx"].encode() + b"\0"  # cuModuleLoadData JITs PTX
            try:
                orig_init_handles(self)
            finally:
                self.kernel = real
            jit_loads.append(self.name)
        else:
            orig_init_handles(self)

    tc.CompiledKernel._init_handles = _init_handles
    note(
        f"forcing sm_{arch} on sm_{dev_cc[0]}{dev_cc[1]}: compile-time launches load the sm_{arch} PTX (driver JIT)"
    )
else:
    jit_loads = []

if args.variant != "cubin" and nvcc is None:
    raise SystemExit(
        "the pt2, embed and cpp_only variants need nvcc (a CUDA toolkit): none found"
    )
if nvcc:
    ic.cuda.cuda_cxx = nvcc

# --------------------------------------------------------------------------- model
B, S, DIN, DOUT = (int(v) for v in args.shape.split(","))
dtype = getattr(torch, args.dtype)


class VisionMLPUp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(DIN, DOUT, bias=False)

    def forward(self, x):
        return torch.nn.functional.gelu(self.fc1(x))


model = VisionMLPUp().to("cuda", dtype).eval()
x = torch.randn(B, S, DIN, device="cuda", dtype=dtype)
with torch.no_grad():
    ref = model(x)
    ep = torch.export.export(model, (x,))

inductor_configs = {
    "max_autotune": True,
    "max_autotune_gemm_backends": "TRITON",
    "max_autotune_conv_backends": "TRITON",
}
if args.variant == "pt2":
    inductor_configs.update(
        {
            "aot_inductor.emit_multi_arch_kernel": True,
            "aot_inductor.embed_kernel_binary": False,
        }
    )
elif (
    args.variant == "embed"
):  # what executorch's CudaBackend.get_aoti_compile_options sets
    inductor_configs.update(
        {
            "aot_inductor.emit_multi_arch_kernel": True,
            "aot_inductor.embed_kernel_binary": True,
            "aot_inductor.package_constants_in_so": False,
            "aot_inductor.package_constants_on_disk_format": "binary_blob",
        }
    )
elif args.variant == "cpp_only":
    inductor_configs.update(
        {
            "aot_inductor.package_cpp_only": True,
            "aot_inductor.emit_multi_arch_kernel": True,
            "aot_inductor.precompile_headers": False,
        }
    )
else:  # cubin: AOTI defaults
    inductor_configs.update(
        {
            "aot_inductor.emit_multi_arch_kernel": False,
            "aot_inductor.embed_kernel_binary": False,
        }
    )
note(f"inductor_configs = {inductor_configs}")

pkg = os.path.join(out, "model.pt2")
t0 = time.time()
try:
    path = torch._inductor.aoti_compile_and_package(
        ep, package_path=pkg, inductor_configs=inductor_configs
    )
except Exception as e:  # keep what there is
    note(f"aoti_compile_and_package FAILED: {type(e).__name__}: {str(e)[:3000]}")
    path = None
note(
    f"compile took {time.time() - t0:.1f}s; JIT-loaded PTX for: {sorted(set(jit_loads))}"
)

# --------------------------------------------------------------------------- report
report = {
    "notes": notes,
    "variant": args.variant,
    "arch": arch,
    "device": dev_props.name,
    "device_cc": dev_cc,
    "torch": torch.__version__,
    "triton": triton.__version__,
    "inductor_configs": {k: str(v) for k, v in inductor_configs.items()},
    "package": path,
}
if path:
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            print(f"{info.file_size:>12}  {info.filename}")
        for name in z.namelist():
            if name.endswith(".wrapper.cpp"):
                for line in z.read(name).decode(errors="replace").splitlines():
                    if "= loadKernel(" in line or "launchKernel(kernels_" in line:
                        print("    " + line.strip()[:300])

# Triton's own metadata of what it compiled (the "folder of cubins with metadata" form)
tmeta = []
for j in glob.glob(os.path.join(out, "triton_cache", "*", "*.json")):
    if os.path.basename(j).startswith("__grp__"):
        continue
    try:
        m = json.load(open(j))
    except ValueError:
        continue
    if "shared" in m:
        tmeta.append(
            {
                k: m.get(k)
                for k in (
                    "name",
                    "shared",
                    "num_warps",
                    "num_stages",
                    "target",
                    "ptx_version",
                )
            }
            | {"dir": os.path.basename(os.path.dirname(j))}
        )
print("-- Triton cache entries (name, shared, num_warps, num_stages, target):")
for m in sorted(tmeta, key=lambda m: m["name"]):
    print("   ", m)
report["triton_cache"] = tmeta

# --------------------------------------------------------------------------- load + run here
if path and not args.no_run and args.variant != "cpp_only":
    if args.variant == "cubin" and arch != dev_cc[0] * 10 + dev_cc[1]:
        note(
            f"not running: an sm_{arch} cubin-only package cannot load on sm_{dev_cc[0]}{dev_cc[1]}"
        )
    else:
        try:
            runner = torch._inductor.aoti_load_package(path)
            got = runner(x)
            got = got[0] if isinstance(got, (list, tuple)) else got
            err = (got.float() - ref.float()).abs().max().item()
            note(
                f"loaded and ran the package on {dev_props.name}: max abs err vs eager {err:.4g}"
            )
        except Exception as e:
            note(f"running the package FAILED: {type(e).__name__}: {str(e)[:2000]}")

report["notes"] = notes
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(report, f, indent=1, default=str)
print(f"[make_package] wrote {out}/report.json")
