"""Flex attention's forward under `tilefit capture`, per device: the template kernel Inductor
generates for each emulated target from a plain `torch.compile(flex_attention)` script
(`examples/compile/flex_attention.py`), its bytes, its verdict and the `kernel_options` that fit.

    python scripts/flex_matrix.py TILEFIT PYTHON [--targets h100,rtx-pro-6000,a10]
        [--head-dims 128,192,256] [--dtypes bf16,fp32] [--json OUT.json]

TILEFIT is the binary, PYTHON an interpreter with torch. Prints a Markdown table; every cell is
read from the capture's JSON report, none typed in.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "examples", "compile", "flex_attention.py")


def template(target):
    """The flex attention template launch of one target's report, and its compile."""
    for launch in target["launches"]:
        inductor = launch.get("inductor") or {}
        if inductor.get("kind") == "template" and "flex_attention" in inductor.get(
            "kernel", ""
        ):
            return launch, target["compiles"][launch["compiles"][0]]
    return None, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tilefit")
    parser.add_argument("python")
    parser.add_argument("--targets", default="h100,rtx-pro-6000,a10")
    parser.add_argument("--head-dims", default="128,192,256")
    parser.add_argument("--dtypes", default="bf16,fp32")
    parser.add_argument("--json")
    args = parser.parse_args()
    cells = []
    failed = False
    for dtype in args.dtypes.split(","):
        for head_dim in args.head_dims.split(","):
            with tempfile.TemporaryDirectory() as scratch:
                report_path = os.path.join(scratch, "report.json")
                run = subprocess.run(
                    [
                        args.tilefit,
                        "capture",
                        "--targets",
                        args.targets,
                        "--python",
                        args.python,
                        "--json",
                        report_path,
                        SCRIPT,
                        "--",
                        head_dim,
                        dtype,
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if not os.path.exists(report_path):
                    print(run.stderr, file=sys.stderr)
                    sys.exit(f"no report for {dtype} head_dim {head_dim}")
                with open(report_path, encoding="utf-8") as f:
                    report = json.load(f)
            for target in report["targets"]:
                launch, compile_ = template(target)
                device = target["device"]["device"]
                if launch is None:
                    failed = True
                    cells.append(
                        {
                            "device": device,
                            "dtype": dtype,
                            "head_dim": int(head_dim),
                            "error": "no flex attention template captured",
                            "failures": target["failures"],
                        }
                    )
                    continue
                cells.append(
                    {
                        "device": device,
                        "arch": target["emulated"]["arch"],
                        "dtype": dtype,
                        "head_dim": int(head_dim),
                        "bytes": compile_["result"]["shared_bytes"],
                        "inductor_bytes": compile_.get("inductor_shared"),
                        "budget": target["emulated"]["smem_per_block_optin"],
                        "verdict": launch["verdict"],
                        "config": compile_["options"],
                        "no_valid_configs": launch["inductor"].get("no_valid_configs"),
                        "fix": (launch.get("fix") or {}).get("pass"),
                        "fix_fits": (launch.get("fix") or {}).get("fits"),
                        # Newer torch retries a kernel none of whose configs loads at
                        # num_stages=1: the retry's bytes (the launch's last compile).
                        "retry_bytes": target["compiles"][launch["compiles"][-1]][
                            "result"
                        ]["shared_bytes"]
                        if launch["inductor"].get("retry")
                        else None,
                    }
                )
    print("| target | arch | dtype | head_dim | bytes | verdict | fix |")
    print("|---|---|---|---:|---:|---|---|")
    for c in cells:
        if "error" in c:
            print(
                f"| {c['device']} | | {c['dtype']} | {c['head_dim']} | | {c['error']} | |"
            )
            continue
        fits = c["fix_fits"][0]["shared_bytes"] if c["fix_fits"] else None
        fix = f"{c['fix']} ({fits:,} bytes)" if c["fix"] and fits else (c["fix"] or "")
        verdict = c["verdict"]
        if c["retry_bytes"] is not None:
            verdict = (
                f"over; torch retries at num_stages=1: {c['retry_bytes']:,} bytes, "
                + ("fails" if c["retry_bytes"] > c["budget"] else "rescued")
            )
        print(
            f"| {c['device']} | {c['arch']} | {c['dtype']} | {c['head_dim']} | "
            f"{c['bytes']:,} | {verdict} | {fix} |"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(cells, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
