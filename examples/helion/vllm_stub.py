"""vLLM's Helion ops and its ConfigManager from an unzipped vLLM wheel, without importing vLLM:
the few `vllm.*` modules they import are stood in with what they read (the platform answers
with the device torch reports, which under `tilefit capture` is the emulated one), and
`case_key.py`, `utils.py`, `config_manager.py` and `ops/*.py` are vLLM's own files, run as they
are. `register_kernel` keeps what each op registers (its function, config picker, settings)."""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
import types
from pathlib import Path

import torch

REGISTERED: dict[str, dict] = {}
_WHEEL: list[Path] = []


def _module(name, **attributes):
    module = sys.modules.get(name) or types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    sys.modules[name] = module
    if not hasattr(module, "__path__"):
        module.__path__ = []
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(_module(parent), child, module)
    return module


class Platform:
    """`vllm.platforms.current_platform` for CUDA: the device name is torch's."""

    @classmethod
    def get_device_name(cls, device_id=0):
        return torch.cuda.get_device_name(device_id)

    @classmethod
    def fp8_dtype(cls):
        return torch.float8_e4m3fn

    @classmethod
    def is_fp8_fnuz(cls):
        return False

    @classmethod
    def is_cuda(cls):
        return True

    @classmethod
    def is_rocm(cls):
        return False


def _logger(name):
    logger = logging.getLogger(name)
    logger.warning_once = logger.warning
    return logger


def install(wheel):
    """Stand in for vLLM's imports and load its dependency-light Helion modules."""
    _WHEEL[:] = [Path(wheel)]
    _module(
        "regex", **{k: getattr(re, k) for k in ("sub", "compile", "match", "search")}
    )
    _module("vllm.logger", init_logger=_logger)
    _module("vllm.utils.import_utils", has_helion=lambda: True)
    _module("vllm.platforms", current_platform=Platform)

    def fp8_min_max():
        info = torch.finfo(Platform.fp8_dtype())
        return info.min, info.max

    _module(
        "vllm.model_executor.layers.quantization.utils.quant_utils",
        get_fp8_min_max=fp8_min_max,
    )
    # Read only by the ops' reference (baseline) functions, never by the kernels.
    _module("vllm.ir", ops=types.SimpleNamespace())
    _module("vllm.model_executor.layers.rotary_embedding", RotaryEmbedding=object)
    _module("vllm.model_executor.layers.activation", SiluAndMul=object)

    def register_kernel(
        op_name=None,
        *,
        config_picker,
        fake_impl=None,
        mutates_args=None,
        helion_settings=None,
        input_generator=None,
    ):
        def decorate(fn):
            REGISTERED[op_name or fn.__name__] = {
                "fn": fn,
                "config_picker": config_picker,
                "helion_settings": helion_settings,
            }
            return fn

        return decorate

    _module("vllm.kernels.helion.register", register_kernel=register_kernel)
    load("vllm.kernels.helion.case_key", "vllm/kernels/helion/case_key.py")
    load("vllm.kernels.helion.utils", "vllm/kernels/helion/utils.py")


def config_manager():
    """vLLM's `config_manager` module (it imports helion)."""
    return load(
        "vllm.kernels.helion.config_manager", "vllm/kernels/helion/config_manager.py"
    )


def load(name, relative):
    spec = importlib.util.spec_from_file_location(name, _WHEEL[0] / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    setattr(_module(parent), child, module)
    spec.loader.exec_module(module)
    return module


def load_op(name):
    return load(f"vllm.kernels.helion.ops.{name}", f"vllm/kernels/helion/ops/{name}.py")


def kernel(name, config=None):
    """The op as vLLM decorates it (`create_helion_decorated_kernel`): its settings, dynamic
    shapes, and the config given."""
    import helion

    registered = REGISTERED[name]
    settings = registered["helion_settings"]
    options = settings.to_dict() if settings is not None else {}
    options["static_shapes"] = False
    if config is not None:
        options["config"] = config
    return helion.kernel(**options)(registered["fn"])


def inputs(op, key):
    """The op's arguments at a config key's shape (each op's `generate_inputs`, vLLM 0.33.0)."""
    bf16, f32, fp8 = torch.bfloat16, torch.float32, torch.float8_e4m3fn

    def empty(*shape, dtype=bf16):
        return torch.empty(*shape, dtype=dtype, device="cuda")

    if op == "silu_mul_fp8":
        n, i = key.get("numtokens", 256), key.get("intermediate", 4096)
        return (empty(n, 2 * i), empty(1, dtype=f32))
    n = key.get("num_tokens", 256)
    if op == "dynamic_per_token_scaled_fp8_quant":
        h = key["hidden_size"]
        return (
            empty(n, h, dtype=fp8),
            empty(n, h),
            empty(n, 1, dtype=f32),
            empty((), dtype=f32),
        )
    if op == "per_token_group_fp8_quant":
        h, g = key["hidden_size"], key["group_size"]
        info = torch.finfo(fp8)
        return (
            empty(n, h),
            empty(n, h, dtype=fp8),
            empty(n, h // g, dtype=f32),
            g,
            1e-10,
            info.min,
            info.max,
            False,
            False,
            False,
        )
    if op == "rms_norm_dynamic_per_token_quant":
        h = key["hidden_size"]
        return (
            empty(n, h, dtype=fp8),
            empty(n, h),
            empty(h),
            empty(n, 1, dtype=f32),
            1e-6,
            empty((), dtype=f32),
            empty(n, h),
        )
    if op == "rms_norm_per_block_quant":
        h, g = key["hidden_size"], key["group_size"]
        return (
            empty(n, h, dtype=fp8),
            empty(n, h),
            empty(h),
            empty(n, h // g, dtype=f32),
            1e-6,
            empty((), dtype=f32),
            empty(n, h),
            g,
            False,
        )
    if op == "silu_and_mul_per_block_quant":
        i, g = key["intermediate_size"], key["group_size"]
        return (
            empty(n, i, dtype=fp8),
            empty(n, 2 * i),
            empty(n, i // g, dtype=f32),
            g,
            empty((), dtype=f32),
            False,
        )
    if op == "fused_qk_norm_rope":
        q, kv, head_dim = key["q_heads"], key["kv_heads"], 128
        positions = torch.empty(n, dtype=torch.int64, device="cuda")
        return (
            empty(n, (q + 2 * kv) * head_dim),
            q,
            kv,
            kv,
            head_dim,
            1e-6,
            empty(head_dim),
            empty(head_dim),
            empty(40960, head_dim),
            True,
            positions,
        )
    raise KeyError(op)
