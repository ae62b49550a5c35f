"""The worker protocol's contract, on the Python side: the compile worker (the package the binary
embeds, ``crates/tilefit-core/src/compile/worker``) answers the requests the Rust half writes
(``contract/requests.json``, kept equal to what the Rust half serializes by
``crates/tilefit-core/tests/core/contract.rs``), and its replies are ``contract/replies.json``,
which that test reads back whole with the Rust half's ``Reply``. A field changed on one side
alone fails one of the two. ``TILEFIT_WRITE_CONTRACT=1`` writes the replies afresh."""

import json
import os
import sys

from conftest import HERE

REPO = os.path.dirname(os.path.dirname(HERE))
CONTRACT = os.path.join(HERE, "contract")


def _worker(scratch):
    """The worker package, imported under its own name as the binary's worker imports it."""
    os.symlink(
        os.path.join(REPO, "crates", "tilefit-core", "src", "compile", "worker"),
        os.path.join(scratch, "tilefit_worker"),
    )
    sys.path.insert(0, scratch)
    try:
        from tilefit_worker import serve
    finally:
        sys.path.remove(scratch)
    return serve


def _normalized(reply):
    """What differs between machines and runs made fixed: the process, the time taken, the
    repository's folder."""
    reply = dict(reply)
    reply["pid"] = 0
    if isinstance(reply.get("timings"), dict):
        reply["timings"] = {key: 0.0 for key in reply["timings"]}
    text = json.dumps(reply, sort_keys=True).replace(REPO, "<repo>")
    return json.loads(text)


def test_the_worker_answers_the_rust_half_s_requests_as_the_contract_says(scratch):
    serve = _worker(scratch)
    with open(os.path.join(CONTRACT, "requests.json"), encoding="utf-8") as f:
        requests = json.loads(f.read().replace("<repo>", REPO))
    replies = []
    for number, request in enumerate(requests):
        reply = serve.handle({**request, "id": number})
        assert reply["status"] == "ok", reply
        replies.append(_normalized(reply))
    inspected, compiled = replies
    assert [p["name"] for p in inspected["params"]] == [
        "x_ptr",
        "out_ptr",
        "n",
        "BLOCK",
    ]
    assert compiled["shared"] >= 0 and compiled["status"] == "ok"
    text = json.dumps(replies, sort_keys=True, indent=1) + "\n"
    path = os.path.join(CONTRACT, "replies.json")
    if os.environ.get("TILEFIT_WRITE_CONTRACT"):
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    with open(path, encoding="utf-8") as f:
        assert text == f.read(), (
            "the worker's replies differ from contract/replies.json: if the change is meant, "
            "run with TILEFIT_WRITE_CONTRACT=1 and then the Rust half's contract test"
        )
