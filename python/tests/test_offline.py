"""The package against exports the real tilefit wrote (paths from the Rust test that drives this:
TILEFIT_TEST_MLA_EXPORT, TILEFIT_TEST_MM_EXPORT, TILEFIT_TEST_MM_REPORT, TILEFIT_TEST_MM_KERNEL).
No GPU: every device is named."""

import importlib.util
import json
import os
import sys
import unittest

import tilefit


def _env(name):
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest(
            f"{name} is not set: run through `cargo test` (tests/cli/python.rs)"
        )
    return value


class OfflineChoices(unittest.TestCase):
    def setUp(self):
        self.choices = tilefit.load(_env("TILEFIT_TEST_MLA_EXPORT"))
        self.fp8 = {"kv_dtype": "fp8e4nv"}

    def test_a_desk_part_gets_the_shallow_config(self):
        config = self.choices.config_for(variant=self.fp8, device="rtx-pro-6000")
        self.assertEqual(config["BLOCK_N"], 64)
        self.assertEqual(config["num_stages"], 1)
        # The arch and the product names resolve to the same entry.
        self.assertEqual(
            self.choices.config_for(variant=self.fp8, device="sm_120"), config
        )
        self.assertEqual(
            self.choices.config_for(variant=self.fp8, device="NVIDIA GeForce RTX 5090"),
            config,
        )

    def test_a_datacenter_part_gets_the_deeper_config_the_report_recommends(self):
        config = self.choices.config_for(variant=self.fp8, device="h100")
        entry = next(
            e for e in self.choices.by_arch["sm_90"] if e["variant"] == self.fp8
        )
        self.assertEqual(config, entry["config"])
        self.assertGreater(config["num_stages"], 1)
        self.assertLessEqual(entry["shared_bytes"], entry["budget"])
        self.assertEqual(entry["budget"], 232448)

    def test_an_unprobed_arch_raises_unless_a_fallback_is_given(self):
        with self.assertRaises(tilefit.NotProbed) as raised:
            self.choices.config_for(variant=self.fp8, device="sm_100")
        self.assertIn("sm_100 was not probed", str(raised.exception))
        self.assertIn("--targets sm_100", str(raised.exception))
        fallback = {"BLOCK_N": 32, "num_stages": 1}
        self.assertEqual(
            self.choices.config_for(
                variant=self.fp8, device="sm_100", fallback=fallback
            ),
            fallback,
        )

    def test_an_ambiguous_or_unknown_question_is_a_clear_error(self):
        with self.assertRaises(tilefit.NotProbed) as raised:
            self.choices.config_for(device="h100")
        self.assertIn("kv_dtype=bf16; kv_dtype=fp8e4nv", str(raised.exception))
        with self.assertRaises(tilefit.UnknownDevice):
            self.choices.config_for(variant=self.fp8, device="rtx-9999")
        with self.assertRaises(tilefit.NotProbed):
            self.choices.config_for(variant={"kv_dtype": "int4"}, device="h100")

    def test_an_arch_where_nothing_fits_says_so(self):
        nothing = [
            (arch, e["variant"])
            for arch, entries in self.choices.by_arch.items()
            for e in entries
            if e["config"] is None
        ]
        self.assertTrue(nothing, "the MLA sweep has an arch where nothing fits (sm_75)")
        arch, variant = nothing[0]
        with self.assertRaises(tilefit.NoConfigFits):
            self.choices.config_for(variant=variant, device=arch)

    def test_a_file_that_is_not_an_export_names_itself(self):
        with self.assertRaises(tilefit.TilefitError) as raised:
            tilefit.load(_env("TILEFIT_TEST_MM_REPORT"))
        self.assertIn("has no `by_arch`", str(raised.exception))


def _autotuned_configs():
    path = _env("TILEFIT_TEST_MM_KERNEL")
    # The example imports its sibling `matmul`, as it would from its own folder.
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("matmul_autotuned", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.matmul_kernel_autotuned.configs


class Pruning(unittest.TestCase):
    def test_the_pruner_keeps_exactly_what_the_probe_says_fits_sm_120(self):
        configs = _autotuned_configs()
        with open(_env("TILEFIT_TEST_MM_REPORT"), encoding="utf-8") as f:
            report = json.load(f)
        row = next(d for d in report["listed"]["per_device"] if d["arch"] == "sm_120")
        # The probe's verdicts, as places in the kernel's own list.
        places = [
            [int(origin.rsplit("#", 1)[1]) for origin in origins]
            for origins in report["listed"]["origins"]
        ]
        expected = sorted(i for c in row["fits"] for i in places[c])
        over = sorted(i for c, _ in row["over"] for i in places[c])
        self.assertTrue(over, "some autotune configs are over sm_120's budget")
        pruner = tilefit.prune(_env("TILEFIT_TEST_MM_EXPORT"), device="sm_120")
        kept = pruner(configs, {})
        kept_places = sorted(configs.index(c) for c in kept)
        self.assertEqual(kept_places, expected)
        self.assertFalse(set(kept_places) & set(over))

    def test_a_datacenter_part_keeps_more(self):
        configs = _autotuned_configs()
        sm90 = tilefit.prune(_env("TILEFIT_TEST_MM_EXPORT"), device="h100")(configs, {})
        sm120 = tilefit.prune(_env("TILEFIT_TEST_MM_EXPORT"), device="sm_120")(
            configs, {}
        )
        self.assertGreater(len(sm90), len(sm120))

    def test_an_export_without_autotune_lists_is_refused(self):
        with self.assertRaises(tilefit.TilefitError):
            tilefit.prune(_env("TILEFIT_TEST_MLA_EXPORT"))


if __name__ == "__main__":
    unittest.main()
