"""The walk a reader makes following `tilefit probe`'s arguments (`args: &ProbeArgs`) through the
code: from the command's entry, every call that is handed `args` or a part of it (`&args.spec`,
`&args.compile`), into the function of tilefit's two crates that receives it, and on from there
with the parameters that received it, depth first in source order (each function entered once),
as the sequence of files it stops in. A stop is entering a file other than the one the walk is
in (coming back to the caller's file counts when the caller goes on); a return to a room already
left is a stop in a file the walk has been in before. Static and approximate (a call is resolved
by its name, and by its path's last module where the name is ambiguous; a method call only where
the name is unique), so the same script must measure both trees.

    python3 scripts/walk_args.py [--past-session] [--track NAME,...] [ROOT] [START ...]

START is `path/to/file.rs:function` (default: where this tree's probe command receives its
`ProbeArgs`). Before the session (a78e2ec): 23 stops, 16 returns; after: 11 stops, 5 returns.
"""

import collections
import os
import re
import sys

FN = re.compile(r"\bfn\s+([a-z_][a-z0-9_]*)\s*(?:<[^>{]*>)?\s*\(")
CALL = re.compile(
    r"(?:\b((?:[A-Za-z_][A-Za-z0-9_]*::)+))?\b([a-z_][a-z0-9_]*)\s*(?:::<[^>]*>)?\("
)
IMPL = re.compile(
    r"\bimpl\b(?:\s*<[^>{]*>)?\s+(?:[\w:<>, ]+?\s+for\s+)?([A-Z][A-Za-z0-9_]*)"
)
METHOD = re.compile(r"\.([a-z_][a-z0-9_]*)\s*(?:::<[^>]*>)?\(")
LET = re.compile(r"\blet\s+(?:mut\s+)?([^=;]*?)\s*(?::[^=;]*)?=(?!=)")
NAME = re.compile(r"\b([a-z_][a-z0-9_]*)\b")
PATTERN_WORDS = {"mut", "ref", "some", "ok", "err", "none", "_"}
KEYWORDS = {
    "if",
    "while",
    "for",
    "match",
    "return",
    "fn",
    "Some",
    "Ok",
    "Err",
    "loop",
    "move",
}


def blank(text):
    """Comments and string contents blanked, line structure kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] == '"' or text.startswith('r#"', i):
            raw = text.startswith('r#"', i)
            end = '"#' if raw else '"'
            j = i + (3 if raw else 1)
            while j < n and not text.startswith(end, j):
                j += 2 if (not raw and text[j] == "\\") else 1
            j = min(n, j + len(end))
            out.append('""' + "\n" * text[i:j].count("\n"))
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def functions(root):
    """name -> [(file, body)] for every fn of the two crates' sources (tests left out)."""
    found = collections.defaultdict(list)
    for crate in ("crates/tilefit/src", "crates/tilefit-core/src"):
        for dirpath, _, names in os.walk(os.path.join(root, crate)):
            for name in sorted(names):
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, name)
                code = blank(open(path, encoding="utf-8").read())
                cut = code.find("#[cfg(test)]")
                code = code if cut < 0 else code[:cut]
                rel = os.path.relpath(path, root)
                impls = []
                for m in IMPL.finditer(code):
                    start = code.find("{", m.end())
                    impls.append((start, close_of(code, start), m.group(1)))
                for m in FN.finditer(code):
                    start = code.find("{", m.end())
                    semi = code.find(";", m.end())
                    if start < 0 or (0 <= semi < start):
                        continue
                    depth, j = 0, start
                    while j < len(code):
                        depth += {"{": 1, "}": -1}.get(code[j], 0)
                        if depth == 0:
                            break
                        j += 1
                    params = params_of(code[m.end() : start])
                    owner = next((t for a, b, t in impls if a < m.start() < b), None)
                    found[m.group(1)].append((rel, code[start : j + 1], params, owner))
    return found


def close_of(code, start):
    """The index of the brace that closes the one at `start`."""
    depth = 0
    for j in range(start, len(code)):
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        if depth == 0:
            return j
    return len(code)


def split_top(text):
    """Top-level comma-separated parts of an argument or parameter list."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{<" and not (ch == "<" and cur and cur[-1] == " "):
            depth += 1
        elif ch in ")]}>" and depth > 0:
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def params_of(signature):
    """Parameter names from the text after `fn name(`: `self` for a receiver."""
    close, depth = len(signature), 1
    for at, ch in enumerate(signature):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            close = at
            break
    names = []
    for part in split_top(signature[:close]):
        head = part.split(":")[0].strip().lstrip("&").replace("mut ", "").strip()
        names.append("self" if head.endswith("self") else head)
    return names


def args_of(body, open_paren):
    """The text between the call's parentheses."""
    depth = 0
    for j in range(open_paren, len(body)):
        depth += {"(": 1, ")": -1}.get(body[j], 0)
        if depth == 0:
            return body[open_paren + 1 : j]
    return ""


def resolve(found, here, qualifier, name):
    candidates = found.get(name, [])
    if len(candidates) == 1:
        return candidates[0]
    if qualifier:
        module = qualifier.rstrip(":").split("::")[-1]
        if module[:1].isupper():
            hits = [c for c in candidates if c[3] == module]
            return hits[0] if len(hits) == 1 else None
        hits = [c for c in candidates if re.search(rf"(^|/){module}(\.rs|/)", c[0])]
        if len(hits) == 1:
            return hits[0]
    same = [c for c in candidates if c[0] == here]
    return same[0] if len(same) == 1 and not qualifier else None


# `--past-session`: follow the data on through what is made of it (bindings), not only the
# flags themselves; `--track NAME,...`: start from these names instead of the parameters (a
# flag's field, as `emit_files`).
PAST_SESSION = False
TRACK = ()


def walk(root, starts):
    found = functions(root)
    seen, stops = set(), []

    def mentions(text, tracked):
        return any(re.search(rf"\b{re.escape(t)}\b", text) for t in tracked)

    def visit(file, body, tracked):
        if not stops or stops[-1] != file:
            stops.append(file)
        calls = []
        for m in CALL.finditer(body):
            if m.group(2) not in KEYWORDS:
                calls.append((m.start(), m.end() - 1, m.group(1), m.group(2), None))
        for m in METHOD.finditer(body):
            if len(found.get(m.group(1), [])) == 1:
                receiver = re.search(r"([A-Za-z_][A-Za-z0-9_.]*)$", body[: m.start()])
                calls.append((m.start(), m.end() - 1, None, m.group(1), receiver))
        if PAST_SESSION:
            # The data goes on in what is made of it: a binding whose value mentions a tracked
            # name is tracked from there on (`let run = Session::of(args)`, `let report = ...`).
            for m in LET.finditer(body):
                end = statement_end(body, m.end())
                calls.append((end, None, m.group(1), body[m.end() : end], "let"))
        for _, paren, qualifier, name, receiver in sorted(calls, key=lambda c: c[0]):
            if receiver == "let":
                if mentions(name, tracked):
                    tracked = tracked | {
                        w
                        for w in NAME.findall(qualifier)
                        if w not in PATTERN_WORDS and not w[:1].isupper()
                    }
                continue
            target = resolve(found, file, qualifier, name)
            if target is None:
                continue
            passed = split_top(args_of(body, paren))
            params = [p for p in target[2] if p != "self"]
            handed = {
                params[k]
                for k, a in enumerate(passed)
                if k < len(params) and mentions(a, tracked)
            }
            if receiver is not None and mentions(receiver.group(1), tracked):
                handed.add("self")
            key = (target[0], name, target[3])
            if not handed or key in seen:
                continue
            seen.add(key)
            visit(target[0], target[1], handed)
            if stops[-1] != file:
                stops.append(file)

    for start in starts:
        file, name = start.split(":")
        body, params = next((b, p) for f, b, p, _ in found[name] if f == file)
        seen.add((file, name, None))
        visit(file, body, set(TRACK) or {p for p in params if p == "args"} or set(params))
    returns = sum(1 for i, f in enumerate(stops) if f in stops[:i])
    visits = collections.Counter(stops)
    return stops, returns, visits


def statement_end(body, start):
    """Where the statement that starts at `start` ends: its `;` at depth 0."""
    depth = 0
    for j in range(start, len(body)):
        ch = body[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return j
            depth -= 1
        elif ch == ";" and depth == 0:
            return j
    return len(body)


def read(path):
    try:
        return open(path, encoding="utf-8").read()
    except OSError:
        return ""


def main():
    global PAST_SESSION, TRACK
    argv = sys.argv[1:]
    if "--past-session" in argv:
        argv.remove("--past-session")
        PAST_SESSION = True
    if "--track" in argv:
        at = argv.index("--track")
        TRACK = tuple(argv[at + 1].split(","))
        del argv[at : at + 2]
    sys.argv = [sys.argv[0], *argv]
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    # Where `ProbeArgs` comes in: the dispatch's probe entry, or (in trees before the session)
    # the probe command's `run`.
    entries = (
        "crates/tilefit/src/commands/mod.rs:probe_command",
        "crates/tilefit/src/commands/probe.rs:run",
    )
    starts = sys.argv[2:] or [
        next(
            s
            for s in entries
            if f"fn {s.split(':')[1]}(" in read(os.path.join(root, s.split(":")[0]))
            and "ProbeArgs" in read(os.path.join(root, s.split(":")[0]))
        )
    ]
    stops, returns, visits = walk(root, starts)
    print(f"{len(stops)} stops, {returns} returns to rooms already left")
    for file, count in visits.most_common(8):
        print(f"  {count:3}  {file}")
    if "-v" in os.environ.get("WALK", ""):
        print("\n".join(stops))


if __name__ == "__main__":
    main()
