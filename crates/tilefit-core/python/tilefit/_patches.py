"""The registry of every change the emulation makes to code that is not its own: an attribute of
torch, Triton, the standard library or an engine replaced, an item of a shared mapping or list
set, a context entered, a signal handler, a hook Python cannot remove. Each is made through the
process's :data:`REGISTRY`, which keeps what it replaced and why, lists them
(:meth:`Registry.listing`) and restores them, last first (:meth:`Registry.restore`).

A capture still runs each target in a process of its own (ARCHITECTURE.md, "One process per
target"): restoring is what the tests check nothing is left by, not how a run switches devices.
Hooks Python cannot remove (an audit hook, a fork handler) ask :meth:`Registry.active` before
they act, and do nothing once the registry is restored.
"""

from __future__ import annotations

import signal as _signal
import threading
import types

#: What an attribute or a key held before a patch that added it.
_MISSING = object()


def _owner_name(owner):
    """A module by its name, a class by its module and qualified name, an instance by its type."""
    if isinstance(owner, types.ModuleType):
        return str(vars(owner).get("__name__", "module"))
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}"
    return type(owner).__name__


def _need(why):
    if not why or not str(why).strip():
        raise ValueError("a patch needs its reason: say why it is made")


def _held(owner, name):
    """What ``owner.name`` holds as a patch replaces it: a class's own entry, else the value."""
    if isinstance(owner, type):
        return vars(owner).get(name, _MISSING)
    if name in getattr(owner, "__dict__", {}):
        return vars(owner)[name]
    return getattr(owner, name, _MISSING)


class Patch:
    """One change: what it changed (``where``), why, and how it is undone."""

    __slots__ = ("kind", "where", "why", "_undo", "_set")

    def __init__(self, kind, where, why, undo, set_=None):
        self.kind = kind
        self.where = where
        self.why = why
        self._undo = undo
        #: An attribute patch's (owner, name, value): what must still be there.
        self._set = set_

    def __repr__(self):
        return f"Patch({self.kind}: {self.where}: {self.why})"


class Registry:
    """The process's patches, in the order they were made."""

    def __init__(self):
        self._patches = []
        self._lock = threading.RLock()
        self._active = True

    def active(self):
        """False once :meth:`restore` ran: a hook that cannot be removed does nothing then."""
        return self._active

    def _add(self, kind, where, why, undo, set_=None):
        with self._lock:
            self._active = True
            self._patches.append(Patch(kind, where, why, undo, set_))

    def replace(self, owner, name, value, why):
        """``setattr(owner, name, value)``, undone by putting back what it held: a class's own
        ``__dict__`` entry (or none, where it inherited the name), else the value read (a config
        module keeps its values outside its ``__dict__``)."""
        _need(why)
        stored = _held(owner, name)
        setattr(owner, name, value)

        def undo():
            if stored is _MISSING:
                if name in getattr(owner, "__dict__", {}):
                    delattr(owner, name)
            else:
                setattr(owner, name, stored)

        where = f"{_owner_name(owner)}.{name}"
        self._add("attribute", where, why, undo, (owner, name, value))
        return value

    def set_item(self, mapping, key, value, why, where=None):
        """``mapping[key] = value`` (``os.environ``, a config dict), undone by the old value."""
        _need(why)
        stored = mapping.get(key, _MISSING)
        mapping[key] = value

        def undo():
            if stored is _MISSING:
                mapping.pop(key, None)
            else:
                mapping[key] = stored

        self._add("item", f"{where or type(mapping).__name__}[{key!r}]", why, undo)
        return value

    def insert(self, sequence, index, item, why, where=None):
        """``sequence.insert(index, item)`` (``sys.meta_path``, a list of callbacks), undone by
        removing that item."""
        _need(why)
        sequence.insert(index, item)

        def undo():
            for at, held in enumerate(sequence):
                if held is item:
                    del sequence[at]
                    return

        self._add("insert", where or f"{type(sequence).__name__} item", why, undo)
        return item

    def enter(self, context, why, where=None):
        """``context.__enter__()``, undone by its ``__exit__``."""
        _need(why)
        entered = context.__enter__()
        self._add(
            "context",
            where or type(context).__name__,
            why,
            lambda: context.__exit__(None, None, None),
        )
        return entered

    def signal(self, signum, handler, why):
        """``signal.signal(signum, handler)``, undone by the handler it replaced."""
        _need(why)
        previous = _signal.signal(signum, handler)
        self._add(
            "signal",
            _signal.Signals(signum).name,
            why,
            lambda: _signal.signal(signum, previous),
        )
        return previous

    def done(self, where, why, undo):
        """A change made by the caller (a ``prctl``, a warnings filter), with its undo."""
        _need(why)
        self._add("call", where, why, undo)

    def permanent(self, where, why):
        """A hook Python cannot remove (``sys.addaudithook``, ``os.register_at_fork``): it asks
        :meth:`active` before it acts."""
        _need(why)
        self._add("permanent", where, why, lambda: None)

    def listing(self):
        """``(kind, where, why)`` of each patch, in the order made."""
        with self._lock:
            return [(p.kind, p.where, p.why) for p in self._patches]

    def drifted(self):
        """The attributes patched here that no longer hold the value the last patch of each set:
        changed again outside the registry."""
        with self._lock:
            last = {}
            for patch in self._patches:
                if patch._set is not None:
                    owner, name, _ = patch._set
                    last[(id(owner), name)] = patch
        return [
            p.where
            for p in last.values()
            if _held(p._set[0], p._set[1]) is not p._set[2]
        ]

    def restore(self):
        """Undo every patch, last first; the hooks that stay become inert. Returns the
        ``(where, error)`` of each undo that failed (none is skipped for another's failure)."""
        with self._lock:
            patches, self._patches = self._patches, []
            self._active = False
        failed = []
        for patch in reversed(patches):
            try:
                patch._undo()
            except Exception as error:  # noqa: BLE001 (every other patch is still undone)
                failed.append((patch.where, f"{type(error).__name__}: {error}"))
        return failed


#: The process's registry: every patch of the emulation and the capture goes through it.
REGISTRY = Registry()
