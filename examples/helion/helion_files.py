"""Write vLLM's Helion platform files for the devices a `vllm_helion.py judge` capture judged:
for each target of the report, each op's entries (from the shipped platform files the capture
ran) whose every launch fits there, in vLLM's format (a JSON array of `{"key", "config"}`,
`indent=2` as its writer), named as vLLM names the device (`canonicalize_gpu_name` of the name
the device reports: `nvidia_rtx_pro_6000_blackwell_workstation_edition.json`). SUMMARY.md says,
per device and op, what was written and what was left out and why.

    python examples/helion/helion_files.py judged.json [judged-2.json ...] WHEEL CONFIGS

Several reports (the captures of `judge --shard K/N`) are one run: their targets' launches are
put together per device.

An entry shipped for several platforms (same key) is taken from the first platform given to
`judge`; an entry with a launch that does not fit, was not judged, or stopped is left out.
The capture must have failed nothing: a report with a failed target writes nothing.
"""

import json
import sys
from pathlib import Path


def canonical(wheel, name):
    """vLLM's own `canonicalize_gpu_name` (utils.py), with its imports stood in."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import vllm_stub

    vllm_stub.install(wheel)
    return sys.modules["vllm.kernels.helion.utils"].canonicalize_gpu_name(name)


def targets(paths):
    """The targets of every report, a device's launches and stops put together."""
    merged = {}
    for path in paths:
        report = json.loads(path.read_text())
        if report.get("kind") != "capture":
            raise SystemExit(
                f"{path}: not a tilefit capture report (kind {report.get('kind')!r})"
            )
        for target in report["targets"]:
            if target.get("failures"):
                raise SystemExit(
                    f"{path}: target {target['device']['device']} failed "
                    f"({target['failures'][0].get('message', '')}): nothing written"
                )
            device = target["device"]["device"]
            if device not in merged:
                merged[device] = dict(target, launches=[], stopped=[])
            merged[device]["launches"] += target["launches"]
            merged[device]["stopped"] += target.get("stopped", [])
    return list(merged.values())


def main():
    *reports, wheel, out = (Path(p) for p in sys.argv[1:])
    if not reports:
        raise SystemExit("usage: helion_files.py REPORT [REPORT ...] WHEEL OUT")
    shipped = wheel / "vllm/kernels/helion/configs"
    summary = ["# Helion platform files written from a tilefit capture", ""]
    for target in targets(reports):
        device = target["device"]["device"]
        platform = canonical(wheel, target["emulated"]["name"])
        verdicts = {}
        for launch in target["launches"]:
            for call in launch.get("calls", []):
                verdicts.setdefault(call, []).append(launch["verdict"])
        stopped = {s.get("call") for s in target.get("stopped", [])}
        summary += [f"## {device}: `{platform}.json`", ""]
        for op_dir in sorted(p for p in shipped.iterdir() if p.is_dir()):
            op, kept, left = op_dir.name, {}, []
            for call in verdicts:
                name, source, key = call.split(" ", 2)
                if name != op:
                    continue
                entry_key = json.loads(key)
                found = verdicts[call]
                if call in stopped or any(v != "fits" for v in found) or not found:
                    left.append(f"{key} from {source}: {', '.join(found) or 'stopped'}")
                    continue
                entries = json.loads((op_dir / f"{source}.json").read_text())
                entry = next(e for e in entries if e["key"] == entry_key)
                kept.setdefault(key, entry)
            if not kept and not left:
                continue
            path = out / op / f"{platform}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(list(kept.values()), indent=2) + "\n")
            summary.append(f"- {op}: {len(kept)} entries written, {len(left)} left out")
            summary += [f"  - left out: {why}" for why in left]
        summary.append("")
    (out / "SUMMARY.md").write_text("\n".join(summary))
    print("\n".join(summary))


main()
