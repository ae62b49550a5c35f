"""The contract between the halves, on the Python side: the records a capture's process writes
are exactly ``contract/records.json``, which the Rust half reads back and must keep whole
(``crates/tilefit-core/tests/core/contract.rs``). A field the Python half adds, renames or drops
alone breaks this test; one the Rust half stops reading breaks that one.
``TILEFIT_WRITE_CONTRACT=1`` writes the fixture afresh."""

import hashlib
import json
import os

from conftest import HERE, device
from contract import scenario

FIXTURE = os.path.join(HERE, "contract", "records.json")


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


def test_the_records_a_capture_writes_are_the_contract_s(emulated):
    emulated("h100")
    records = _normalized(scenario.run(device("h100")))
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
