"""Autotune pruning from an export: ``@triton.autotune(prune_configs_by={"early_config_prune":
tilefit.prune("fix.json")})`` drops the entries the offline probe found over this device's budget,
so the autotuner never benchmarks them and never ends up with nothing."""

from tilefit._choices import Choices, load
from tilefit._errors import NoConfigFits, NotProbed, TilefitError


def _signature(kwargs, num_warps, num_stages, num_ctas, maxnreg):
    return (
        tuple(sorted(kwargs.items())),
        num_warps,
        num_stages,
        num_ctas if num_ctas is not None else 1,
        maxnreg,
    )


def _of_config(config):
    return _signature(
        dict(config.kwargs),
        config.num_warps,
        config.num_stages,
        getattr(config, "num_ctas", 1),
        getattr(config, "maxnreg", None),
    )


def _of_export(entry):
    return _signature(
        {k: v for k, v in entry["kwargs"]},
        entry["num_warps"],
        entry["num_stages"],
        entry.get("num_ctas"),
        entry.get("maxnreg"),
    )


class _Pruner:
    def __init__(self, choices, variant, device):
        autotune = choices.data.get("autotune")
        if not autotune:
            raise TilefitError(
                f"{choices.path} has no autotune lists: probe the @triton.autotune kernel itself "
                "(a spec whose [kernel] function is the autotuned wrapper, with [sweep] autotune = true) "
                "and export again with --emit-configs"
            )
        self.choices = choices
        self.by_arch = autotune["by_arch"]
        self.variant = variant
        self.device = device
        self._arch = None

    def arch(self):
        if self._arch is None:
            self._arch, _ = self.choices.arch_of(self.device)
        return self._arch

    def fitting(self, named_args):
        arch = self.arch()
        entries = self.by_arch.get(arch)
        if entries is None:
            raise NotProbed(
                f"{arch} was not probed: {self.choices.path} has autotune lists for "
                f"{', '.join(sorted(self.by_arch))}; probe with `--targets {arch}`"
            )
        variant = self.variant(named_args) if callable(self.variant) else self.variant
        if variant is None:
            if len(entries) != 1:
                raise NotProbed(
                    f"{self.choices.path} has {len(entries)} workload variants for {arch}: "
                    "pass prune(..., variant={...}) or a function of the named arguments"
                )
            entry = entries[0]
        else:
            want = {k: str(v) for k, v in variant.items()}
            entry = next(
                (
                    e
                    for e in entries
                    if {k: str(v) for k, v in e["variant"].items()} == want
                ),
                None,
            )
            if entry is None:
                raise NotProbed(f"variant {want} was not probed for {arch}")
        return arch, {_of_export(c) for c in entry["configs"]}

    def __call__(self, configs, named_args, **kwargs):
        arch, fitting = self.fitting(named_args)
        kept = [c for c in configs if _of_config(c) in fitting]
        if not kept:
            raise NoConfigFits(
                f"none of the {len(configs)} autotune configs fits {arch} according to "
                f"{self.choices.path}: add a config with smaller tiles or fewer stages"
            )
        return kept


def prune(path, variant=None, device=None):
    """An ``early_config_prune`` function: keeps the configs the export lists as fitting the
    current device's arch (or ``device``: a fleet name, product name or arch). ``variant`` is a
    dict of the workload variant's values, or a function of the autotuner's named arguments
    returning one; it may be left out when the export has one variant."""
    choices = path if isinstance(path, Choices) else load(path)
    return _Pruner(choices, variant, device)
