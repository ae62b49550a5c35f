"""The contract between the halves, on the Python side: the records a capture's process writes
are exactly ``contract/records.json``, which the Rust half reads back and must keep whole
(``crates/tilefit-core/tests/core/contract.rs``). A field the Python half adds, renames or drops
alone breaks this test; one the Rust half stops reading breaks that one.
``TILEFIT_WRITE_CONTRACT=1`` writes the fixture afresh."""

import hashlib
import json
import os

import triton
import triton.language as tl
from conftest import HERE, device

from tilefit import _capture, _state

FIXTURE = os.path.join(HERE, "contract", "records.json")


@triton.jit
def scale(x_ptr, out_ptr, n, factor, mask_ptr, BLOCK: tl.constexpr, KIND: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets, (x * factor).to(KIND), mask=offsets < n)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 64}, num_warps=2),
        triton.Config({"BLOCK": 128}, num_warps=4, num_stages=3),
    ],
    key=["n"],
)
@triton.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(
        x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n
    )


def _normalized(records):
    """The records with what differs between machines and runs made fixed: versions, the
    folders files are in (a scope file names its kernel's file: its digest is taken again, as
    the reader checks it)."""
    text = json.dumps(records, sort_keys=True, indent=1)
    text = text.replace(os.path.dirname(os.path.dirname(HERE)), "<repo>")
    value = json.loads(text)
    value["versions"] = {k: f"<{k}>" for k in value["versions"]}
    renamed = {
        digest: hashlib.sha256(scope.encode()).hexdigest()
        for digest, scope in value["scopes"].items()
    }
    value["scopes"] = {renamed[d]: scope for d, scope in value["scopes"].items()}
    for launch in value["launches"]:
        launch["kernel"]["scope"] = renamed.get(launch["kernel"]["scope"])
    return value


def _run():
    import torch

    recorder = _capture.Recorder(device("h100"))
    _capture.install(recorder, _state.RUN.emulation)
    recorder.begin_call("contract")
    _capture.add_user_root(HERE + os.sep)
    x = torch.randn(1000, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    scale[(16,)](x, out, 1000, 1, None, BLOCK=64, KIND=tl.float16)
    tuned[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, 1000)
    # An assumption (memory never written) and a check passed over.
    _assumed = int(torch.empty(4, device="cuda", dtype=torch.int32).sum().item())
    torch.testing.assert_close(x, out)
    recorder.exit = 0
    return _normalized(recorder.as_json())


def test_the_records_a_capture_writes_are_the_contract_s(emulated):
    emulated("h100")
    records = _run()
    kinds = {launch["kernel"]["function"] for launch in records["launches"]}
    assert kinds == {"scale", "tuned"}
    assert records["assumptions"] and records["checks"]
    text = json.dumps(records, sort_keys=True, indent=1) + "\n"
    if os.environ.get("TILEFIT_WRITE_CONTRACT"):
        with open(FIXTURE, "w", encoding="utf-8") as out:
            out.write(text)
    with open(FIXTURE, encoding="utf-8") as f:
        kept = f.read()
    assert text == kept, (
        "the records differ from contract/records.json: if the change is meant, run with "
        "TILEFIT_WRITE_CONTRACT=1 and then the Rust half's contract test"
    )
