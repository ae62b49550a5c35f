# --- What a failed compile was: classified, with its place in the kernel's source --------------

import traceback

from ._jit import unwrap
from .compiling import CompileFailed
from .stand_ins import JobError, _modules

UNSUPPORTED_MARKERS = (
    "not supported",
    "unsupported",
    "is not available on",
    "requires compute capability",
    "only supported on",
)


def first_line(lines):
    """The first line naming an error, joined with its continuation when it stops mid-sentence
    ("... because", "...:")."""
    for i, line in enumerate(lines):
        if "error" in line.lower():
            if line.rstrip().endswith(("because", ":")) and i + 1 < len(lines):
                return f"{line} {lines[i + 1]}"
            return line
    return lines[0] if lines else ""


def source_location(error):
    """`file.py:LINE:COL` of a CompilationError: its node's line is counted from the `def` line of
    the JIT function whose source it carries, so find that function among the loaded modules."""
    node = getattr(error, "node", None)
    src = getattr(error, "src", None)
    if node is None or src is None or not hasattr(node, "lineno"):
        return None
    for module, _ in list(_modules.values()):
        for value in vars(module).values():
            value = unwrap(value)[0]
            if value is not None and getattr(value, "src", None) == src:
                raw = "".join(getattr(value, "raw_src", []) or [])
                before_def = 0
                for line in raw.splitlines():
                    if line.lstrip().startswith("def "):
                        break
                    before_def += 1
                line = value.starting_line_number + before_def + node.lineno - 1
                code = getattr(value.fn, "__code__", None)
                path = code.co_filename if code is not None else "?"
                src_lines = src.split("\n")
                text = (
                    src_lines[node.lineno - 1].strip()
                    if 0 < node.lineno <= len(src_lines)
                    else ""
                )
                return {
                    "file": path,
                    "line": line,
                    "column": node.col_offset + 1,
                    "text": text,
                }
    return None


def compilation_errors(error):
    """The chain of CompilationErrors, outermost first (a call into a JIT helper nests them)."""
    chain = []
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if type(error).__name__ in (
            "CompilationError",
            "CompileTimeAssertionFailure",
            "UnsupportedLanguageConstruct",
        ):
            chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def classify(error):
    """(kind, one-line reason, traceback, the compiler's whole diagnostic, source location)."""
    detail = traceback.format_exc()
    diagnostic = ""
    if isinstance(error, CompileFailed):
        diagnostic = error.diagnostic
        error = error.error
    cause = error.__cause__ or error.__context__
    text = (
        str(cause)
        if cause is not None and type(error).__name__ == "CompilationError"
        else str(error)
    )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if type(error).__name__ == "CompilationError" and cause is None and lines:
        # "at 12:4:\n<source>\n^\nValueError(...)": the last line is the error itself.
        first = lines[-1]
    else:
        first = first_line(lines) or type(error).__name__
    if diagnostic and diagnostic not in first:
        # "PassManager::run failed" says nothing; the compiler's own line says what failed.
        first = f"{first}: {diagnostic}"
    lowered = (text + " " + diagnostic).lower()
    kind = (
        "unsupported-on-target"
        if any(marker in lowered for marker in UNSUPPORTED_MARKERS)
        else "compile-error"
    )
    chain = compilation_errors(error)
    location = None
    for compilation_error in reversed(
        chain
    ):  # the innermost names the line that failed
        location = source_location(compilation_error)
        if location:
            break
    whole = "\n\n".join(str(e) for e in chain) if chain else text
    if diagnostic and diagnostic not in whole:
        whole = f"{whole}\n{diagnostic}"
    if chain:
        # The reason is the innermost error's own message, not the "at 13:18:" header.
        inner = chain[-1]
        reason_lines = [
            line.strip()
            for line in str(getattr(inner, "error_message", "") or "").splitlines()
            if line.strip()
        ]
        cause = inner.__cause__
        if not reason_lines and cause is not None:
            reason_lines = [
                line.strip() for line in str(cause).splitlines() if line.strip()
            ]
        if reason_lines:
            first = (
                reason_lines[-1]
                if reason_lines[0].startswith("at ")
                else reason_lines[0]
            )
            if diagnostic and diagnostic not in first:
                first = f"{first}: {diagnostic}"
    return kind, first[:500], detail[-4000:], whole[-16000:], location


def error_reply(error):
    """A reply's error fields: a JobError as it says, anything else classified."""
    if isinstance(error, JobError):
        return {
            "status": "error",
            "error": {
                "kind": error.kind,
                "message": error.message,
                "detail": error.detail,
            },
        }
    kind, message, detail, diagnostic, location = classify(error)
    return {
        "status": "error",
        "error": {
            "kind": kind,
            "message": message,
            "detail": detail,
            "diagnostic": diagnostic,
            "location": location,
        },
    }
