"""The rule at run time on a real GPU (skipped without one): ``tilefit.fit`` compiles each candidate
with the launch's real tensors, rejects the one over the driver's opt-in budget by its bytes, and
the config it returns launches. ``config_for()`` with no device resolves the live arch.
With TILEFIT_TEST_OUT set, the outputs are written there for the record."""

import json
import os
import sys
import unittest
import warnings

import tilefit

_EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "matmul")


def _cuda():
    if os.environ.get("TILEFIT_TEST_NO_GPU"):
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _record(name, text):
    out = os.environ.get("TILEFIT_TEST_OUT")
    if out:
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(text + "\n")


@unittest.skipIf(_cuda() is None, "no CUDA/HIP device")
class FitOnTheDevice(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, os.path.abspath(_EXAMPLES))
        from matmul import matmul_kernel

        self.kernel = matmul_kernel
        torch = _cuda()
        self.torch = torch
        size = 1024
        self.a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        self.b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        self.c = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
        self.args = (
            self.a,
            self.b,
            self.c,
            size,
            size,
            size,
            self.a.stride(0),
            self.a.stride(1),
            self.b.stride(0),
            self.b.stride(1),
            self.c.stride(0),
            self.c.stride(1),
        )
        # The first candidate stages (256 + 256) x 64 bf16 values 4 deep: over any 227 KiB part.
        self.candidates = [
            {
                "BLOCK_M": 256,
                "BLOCK_N": 256,
                "BLOCK_K": 64,
                "num_warps": 8,
                "num_stages": 4,
            },
            {
                "BLOCK_M": 128,
                "BLOCK_N": 128,
                "BLOCK_K": 64,
                "num_warps": 8,
                "num_stages": 3,
            },
        ]

    def test_fit_skips_the_candidate_over_the_budget_and_the_choice_launches(self):
        torch = self.torch
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        chosen = tilefit.fit(self.kernel, self.candidates, *self.args, GROUP_M=8)
        _record("fit.txt", str(chosen))
        self.assertEqual(chosen.index, 1)
        self.assertEqual(chosen.config, self.candidates[1])
        self.assertEqual(chosen.budget, props.shared_memory_per_block_optin)
        self.assertLessEqual(chosen.shared_bytes, chosen.budget)
        (first,) = chosen.rejected
        self.assertGreater(first.shared_bytes, props.shared_memory_per_block_optin)
        self.assertEqual(first.over_by, first.shared_bytes - chosen.budget)
        self.assertIn(
            f"{first.over_by} over the {chosen.budget}-byte budget", str(first)
        )

        # The launch with the returned config succeeds and computes the product.
        config = dict(chosen.config)
        grid = (
            triton_cdiv(1024, config["BLOCK_M"]) * triton_cdiv(1024, config["BLOCK_N"]),
        )
        self.kernel[grid](*self.args, GROUP_M=8, **config)
        torch.cuda.synchronize()
        expected = (self.a.float() @ self.b.float()).to(torch.bfloat16)
        self.assertTrue(
            torch.allclose(self.c.float(), expected.float(), atol=1.0, rtol=0.05)
        )

        # The first candidate, launched as is, is what fit spared the caller.
        from triton.runtime.errors import OutOfResources

        with self.assertRaises(OutOfResources) as raised:
            self.kernel[(1,)](*self.args, GROUP_M=8, **self.candidates[0])
        self.assertEqual(raised.exception.required, first.shared_bytes)
        _record("launch-first.txt", str(raised.exception))

        # Memoized: a second call with the same specialization compiles nothing.
        from tilefit import _fit

        before = len(_fit._memo)
        again = tilefit.fit(self.kernel, self.candidates, *self.args, GROUP_M=8)
        self.assertEqual(len(_fit._memo), before)
        self.assertEqual(again, chosen)

    def test_config_for_without_a_device_reads_the_live_one(self):
        export = os.environ.get("TILEFIT_TEST_MLA_EXPORT")
        if not export:
            self.skipTest("TILEFIT_TEST_MLA_EXPORT is not set")
        torch = self.torch
        major, minor = torch.cuda.get_device_capability()
        arch = f"sm_{major}{minor}"
        choices = tilefit.load(export)
        with warnings.catch_warnings():
            warnings.simplefilter(
                "error"
            )  # a budget disagreement would be a TableMismatch
            live = choices.config_for(variant={"kv_dtype": "fp8e4nv"})
        named = choices.config_for(variant={"kv_dtype": "fp8e4nv"}, device=arch)
        self.assertEqual(live, named)
        entry = choices.entry_for(variant={"kv_dtype": "fp8e4nv"}, device=arch)
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.assertEqual(entry["budget"], props.shared_memory_per_block_optin)
        _record(
            "config_for.json",
            json.dumps(
                {
                    "device": props.name,
                    "arch": arch,
                    "config": live,
                    "table_budget": entry["budget"],
                    "driver_optin": props.shared_memory_per_block_optin,
                }
            ),
        )


def triton_cdiv(a, b):
    return (a + b - 1) // b


if __name__ == "__main__":
    unittest.main()
