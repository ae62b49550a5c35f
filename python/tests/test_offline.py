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


class HostileExports(unittest.TestCase):
    """Every malformed export is a BadExport naming the file and the field, never a raw
    UnicodeDecodeError, RecursionError, AttributeError or TypeError."""

    def setUp(self):
        import tempfile

        self.folder = tempfile.TemporaryDirectory(prefix="tilefit-pytest-exports-")
        self.addCleanup(self.folder.cleanup)

    def _load(self, name, data):
        path = os.path.join(self.folder.name, name)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else json.dumps(data).encode())
        with self.assertRaises(tilefit.BadExport) as raised:
            tilefit.load(path)
        message = str(raised.exception)
        self.assertIn(path, message)
        return message

    def test_each_malformed_export_names_its_file_and_field(self):
        self.assertIn("not UTF-8", self._load("latin1.json", b'\xff{"by_arch": {}}'))
        self.assertIn(
            "nested too deeply", self._load("deep.json", b"[" * 100000 + b"]" * 100000)
        )
        self.assertIn(
            "`by_arch`", self._load("int.json", {"schema_version": 1, "by_arch": 5})
        )
        self.assertIn(
            "`devices`",
            self._load(
                "list.json", {"schema_version": 1, "by_arch": {}, "devices": ["h100"]}
            ),
        )
        self.assertIn(
            "`schema_version` is 999",
            self._load("future.json", {"schema_version": 999, "by_arch": {}}),
        )
        self.assertIn(
            "`by_arch.sm_90[0].config`",
            self._load(
                "config.json",
                {
                    "schema_version": 1,
                    "by_arch": {"sm_90": [{"variant": {}, "config": 3}]},
                },
            ),
        )
        # Found by fuzzing `load` (fuzz/python/load_export.py): an entry without its variant.
        self.assertIn(
            "`by_arch.sm_90[0].variant`",
            self._load(
                "no-variant.json",
                {"schema_version": 1, "by_arch": {"sm_90": [{"config": {}}]}},
            ),
        )
        self.assertIn(
            "`autotune.by_arch.sm_90[0].configs[0].kwargs`",
            self._load(
                "autotune.json",
                {
                    "schema_version": 1,
                    "by_arch": {},
                    "autotune": {
                        "by_arch": {
                            "sm_90": [
                                {
                                    "variant": {},
                                    "configs": [{"kwargs": {"BLOCK": 64}}],
                                }
                            ]
                        }
                    },
                },
            ),
        )
        self.assertIn("not JSON", self._load("garbled.json", b"{"))
        self.assertIn("not an export object", self._load("array.json", [1, 2]))


class NamesAndFallbacks(unittest.TestCase):
    def setUp(self):
        self.choices = tilefit.load(_env("TILEFIT_TEST_MLA_EXPORT"))
        self.fp8 = {"kv_dtype": "fp8e4nv"}

    def test_configs_hold_kernel_parameters_only(self):
        for arch, entries in self.choices.by_arch.items():
            for entry in entries:
                if entry["config"] is not None:
                    self.assertNotIn("kv_dtype", entry["config"], arch)
                    self.assertIn("kv_dtype", entry["variant"], arch)
                    self.assertIn("BLOCK_N", entry["config"], arch)

    def test_every_product_name_of_the_table_resolves_to_its_arch(self):
        # GB10 is sm_121, which the default fleet does not probe: the name is known, the arch
        # was not probed, and a fallback is honoured.
        for name in ("gb10", "GB10", "NVIDIA GB10", "DGX Spark"):
            with self.assertRaises(tilefit.NotProbed) as raised:
                self.choices.config_for(variant=self.fp8, device=name)
            self.assertIn("sm_121 was not probed", str(raised.exception))
            fallback = {"BLOCK_N": 32, "num_stages": 1}
            self.assertEqual(
                self.choices.config_for(
                    variant=self.fp8, device=name, fallback=fallback
                ),
                fallback,
            )
        self.assertEqual(
            self.choices.config_for(
                variant=self.fp8, device="rtx-9999", fallback={"x": 1}
            ),
            {"x": 1},
        )

    def test_no_gpu_is_a_tilefit_error_that_says_what_to_pass(self):
        if not os.environ.get("TILEFIT_TEST_NO_GPU"):
            raise unittest.SkipTest("a GPU may be visible here")
        for call in (
            lambda: self.choices.config_for(variant=self.fp8),
            lambda: tilefit.current_device(),
            lambda: tilefit.prune(_env("TILEFIT_TEST_MM_EXPORT"))([], {}),
        ):
            with self.assertRaises(tilefit.NoDevice) as raised:
                call()
            self.assertIn('device="sm_120"', str(raised.exception))
        self.assertEqual(
            self.choices.config_for(variant=self.fp8, fallback={"x": 1}), {"x": 1}
        )

    def test_the_prune_hint_names_what_exists(self):
        with self.assertRaises(tilefit.TilefitError) as raised:
            tilefit.prune(_env("TILEFIT_TEST_MLA_EXPORT"))
        self.assertIn("autotune = true", str(raised.exception))
        self.assertNotIn("from_autotune", str(raised.exception))


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


class SharedNameVectors(unittest.TestCase):
    """The Python normalization against the vectors the Rust suite reads too
    (tests/vectors/device_names.json), so the two cannot drift apart."""

    def test_every_vector_normalizes_to_its_key(self):
        from tilefit._choices import normalize_name

        path = os.path.join(
            os.path.dirname(__file__),
            "..",
            "..",
            "tests",
            "vectors",
            "device_names.json",
        )
        with open(path, encoding="utf-8") as f:
            vectors = json.load(f)["vectors"]
        self.assertGreaterEqual(len(vectors), 30)
        wrong = [
            f"{v['name']!r}: {normalize_name(v['name'])!r}, the vectors say {v['key']!r}"
            for v in vectors
            if normalize_name(v["name"]) != v["key"]
        ]
        self.assertEqual(wrong, [])
