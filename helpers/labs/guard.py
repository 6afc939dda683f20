"""What a check is made of, kept as it was imported, and verified before every verdict.

A check runs in the same kernel as the learner's code, so that code can reach it: rebind a check
module's function or constant (`lab08.Cases.result = ...`), replace an exercise's checker
(`q1.checker = ...`), patch `random` so the draws come out as wanted. This module

- **snapshots** every course module (`helpers.*`, the checks and what they are built on) when it
  is imported, and the standard-library modules the checks call (`random`, `asyncio`, `time`,
  `threading`, ..., the real builtins): every module-level name and what it is bound to, every
  function's code, defaults, keyword defaults and closure cells, every class's own attributes,
  the functions and containers reachable from them;
- snapshots the library modules the course's scenarios and checks drive (`LIBRARY_WATCHED`:
  LangGraph's Pregel, StateGraph, ToolNode, checkpointer; LangChain's tools, runnables, messages,
  `create_agent`): their functions, their classes' methods and those methods' code;
- keeps each `Exercise`'s fields (its checker, the names it reads, its hints) and its class in a
  private registry when the exercise is created; the exercise's `checker` attribute becomes an
  opaque stand-in, and the check runs the registered checker;
- **verifies** all of it in a few milliseconds (`changes()`), so `Exercise.check` can refuse to
  judge, naming what was changed, when something no longer is what it was;
- draws from a private random generator (`rng()`) whose methods no patch of `random` reaches;
- **scans** the learner's code (`scan(sources)`): the cells a kernel ran, or a notebook's cells in
  grading, for code that reads or writes a check's internals (a lab module's names beyond its
  `__all__`, an exercise's checker — also through a simple alias, `ex = [q1][0]` —, `setattr`/
  `vars()`/`__dict__` on them, a function's `__globals__`, `__closure__`, `__self__`, frames, `gc`,
  `sys.modules`, `importlib.reload`, and code it cannot read: `exec`/`eval`/`compile`, `%run`,
  `getattr`/`setattr` with a name built at run time, a dunder name built from strings).

It is not a sandbox: code in one process can always reach the objects of that process. What it
does is make the honest mistake and the casual shortcut visible, with a verdict that says what
was changed; `make labs` (helpers/labs/build.py) adds a pristine copy of the checks loaded before
any learner cell runs. labs/README.md says what remains out of reach.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib.abc
import importlib.machinery
import re
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HELPERS = Path(__file__).resolve().parent.parent
COURSE_PREFIX = "helpers"
STDLIB_WATCHED = (
    "builtins",
    "random",
    "asyncio",
    "threading",
    "time",
    "uuid",
    "inspect",
    "functools",
    "contextlib",
    "contextvars",
    "operator",
    "itertools",
    "collections",
    "json",
    "copy",
    "re",
)
"""Standard-library modules whose functions and classes the checks call: a patch of one of them
(`random.randint = ...`, `time.perf_counter = ...`) is a change the verification names."""
_DEPTH = 4
_MISSING = object()
_VOLATILE = frozenset(
    {
        "__doc__",
        "__annotations__",
        "__abstractmethods__",
        "_abc_impl",
        "__parameters__",
        "__orig_bases__",
        "__weakref__",
        "__dict__",
        "__slotnames__",
        "__signature__",
        "__firstlineno__",
        "__static_attributes__",
        "__match_args__",
    }
)
"""Class attributes Python or pydantic set lazily: not part of what is verified."""
_RUNTIME_STATE = frozenset({"passed"})
"""Attributes a check sets on its own objects while it runs (an exercise's `passed`)."""


def _is_course_file(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(HELPERS)
    except (OSError, ValueError):
        return False


def _is_course_module_name(name: str) -> bool:
    return name == COURSE_PREFIX or name.startswith(COURSE_PREFIX + ".")


def _is_course_type(kind: type) -> bool:
    return _is_course_module_name(getattr(kind, "__module__", "") or "")


def _short(name: str) -> str:
    """`helpers.labs.lab08` → `lab08`; `helpers.labs` → `helpers.labs`."""
    if name.startswith("helpers.labs."):
        return name.removeprefix("helpers.labs.")
    return name


_CODE_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    staticmethod,
    classmethod,
    property,
    functools.partial,
    type,
)


def _code_like(value: Any) -> bool:
    return isinstance(value, _CODE_TYPES) or type(value).__name__ == "_lru_cache_wrapper"


# -- facts: what must still hold -----------------------------------------------------------------------
# Each fact is a tuple (kind, container, key, expected, label). Kinds:
#   "item"  container is a dict:      container.get(key) is expected
#   "attr"  any object:               getattr(container, key) is expected
#   "index" container is a list:      container[key] is expected
#   "keys"  container is a dict:      its keys are exactly `expected` (a frozenset)
#   "grow"  container is a dict:      its keys include `expected` (a cache that only grows)
#   "len"   container is a list:      len(container) == expected
#   "set"   container is a set:       frozenset(container) == expected
#   "added" container is a class dict: no function-like value under a key not in `expected`
Fact = tuple[str, Any, Any, Any, str]


class _Walker:
    """Builds the facts for one module (or one exercise's fields)."""

    def __init__(self, facts: list[Fact], modules: set[str]) -> None:
        self.facts = facts
        self.seen: set[int] = set()
        self.modules = modules  # modules met on the way (snapshotted too, if watched)

    def fact(self, kind: str, container: Any, key: Any, expected: Any, label: str) -> None:
        if kind == "attr" and isinstance(container, type):
            kind, container = "item", vars(container)  # a class's own dict, live, read without lookup
        self.facts.append((kind, container, key, expected, label))

    def module(self, module: types.ModuleType) -> None:
        name = module.__name__
        label = _short(name)
        space = vars(module)
        self.fact("keys", space, name, frozenset(space), label)
        for key, value in list(space.items()):
            if key in ("__builtins__", "__loader__", "__spec__", "__cached__", "__file__", "__path__"):
                continue
            self.fact("item", space, key, value, f"{label}.{key}")
            self.value(value, f"{label}.{key}", 1, grows=key.startswith("_"))

    def value(
        self, value: Any, label: str, depth: int, *, grows: bool = False, code_only: bool = False
    ) -> None:
        if depth > _DEPTH or id(value) in self.seen:
            return
        kind = type(value)
        if isinstance(value, types.ModuleType):
            self.modules.add(value.__name__)
            return
        if kind.__name__ == "Exercise" and _is_course_type(kind):
            return  # an exercise's fields are registered when it is created (`register`)
        self.seen.add(id(value))
        if isinstance(value, types.FunctionType):
            self.function(value, label, depth)
        elif isinstance(value, staticmethod | classmethod):
            self.value(value.__func__, label, depth + 1)
        elif isinstance(value, property):
            for part in ("fget", "fset", "fdel"):
                if getattr(value, part) is not None:
                    self.value(getattr(value, part), label, depth + 1)
        elif isinstance(value, types.MethodType):
            self.value(value.__func__, label, depth + 1)
        elif isinstance(value, functools.partial):
            self.fact("attr", value, "func", value.func, label)
            self.value(value.func, label, depth + 1)
            for item in value.args:
                self.value(item, label, depth + 1, code_only=True)
        elif kind.__name__ == "_lru_cache_wrapper":
            wrapped = getattr(value, "__wrapped__", None)
            if wrapped is not None:
                self.fact("attr", value, "__wrapped__", wrapped, label)
                self.value(wrapped, label, depth + 1)
        elif isinstance(value, type):
            self.cls(value, label, depth)
        elif kind is dict:
            self.mapping(value, label, depth, grows=grows, code_only=code_only)
        elif kind is list:
            if not code_only:
                if grows:
                    return
                self.fact("len", value, None, len(value), label)
            for index, item in enumerate(value):
                if not code_only or _code_like(item):
                    self.fact("index", value, index, item, f"{label}[{index}]")
                self.value(item, f"{label}[{index}]", depth + 1, code_only=code_only)
        elif kind is set:
            if not code_only and not grows:
                self.fact("set", value, None, frozenset(value), label)
        elif kind in (tuple, frozenset):
            for index, item in enumerate(value):
                self.value(item, f"{label}[{index}]", depth + 1, code_only=code_only)
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            self.instance(value, label, depth)

    def function(self, fn: types.FunctionType, label: str, depth: int) -> None:
        self.fact("attr", fn, "__code__", fn.__code__, label)
        self.fact("attr", fn, "__defaults__", fn.__defaults__, label)
        self.fact("attr", fn, "__kwdefaults__", fn.__kwdefaults__, label)
        course = _is_course_file(fn.__code__.co_filename)
        if fn.__kwdefaults__:
            for key, default in fn.__kwdefaults__.items():
                self.fact("item", fn.__kwdefaults__, key, default, f"{label} (default of {key})")
                if course:
                    self.value(default, label, depth + 1, code_only=True)
        if not course:
            return
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell (a name assigned later)
                continue
            self.fact("attr", cell, "cell_contents", contents, f"{label} (its `{name}`)")
            self.value(contents, f"{label}.{name}", depth + 1, code_only=not _code_like(contents))
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None:
            self.fact("attr", fn, "__wrapped__", wrapped, label)
            self.value(wrapped, label, depth + 1)

    def cls(self, kind: type, label: str, depth: int) -> None:
        space = vars(kind)  # a read-only proxy of the class's own dict: live
        course = _is_course_type(kind)
        if kind.__module__ == "builtins":
            return
        for base in kind.__mro__[1:-1]:  # the methods it inherits: a patch of a base reaches it too
            if id(base) not in self.seen and base.__module__ != "builtins":
                self.seen.add(id(base))
                self.cls(base, f"{base.__module__.rsplit('.', 1)[-1]}.{base.__qualname__}", depth + 1)
        self.fact("added", kind, None, frozenset(space), label)
        for key, value in list(space.items()):
            if key in _VOLATILE or (not course and (key.startswith("__pydantic") or not _code_like(value))):
                continue
            if not course and not _code_like(value):
                continue
            self.fact("attr", kind, key, value, f"{label}.{key}")
            if _code_like(value):
                self.value(value, f"{label}.{key}", depth + 1)

    def mapping(self, value: dict, label: str, depth: int, *, grows: bool, code_only: bool) -> None:
        if not code_only:
            self.fact("grow" if grows else "keys", value, None, frozenset(value), label)
        for key, item in list(value.items()):
            if code_only and not _code_like(item) and type(item) not in (dict, list, tuple):
                if not (hasattr(item, "__dict__") and _is_course_type(type(item))):
                    continue
            self.fact("item", value, key, item, f"{label}[{key!r}]")
            self.value(item, f"{label}[{key!r}]", depth + 1, code_only=code_only)

    def instance(self, value: Any, label: str, depth: int) -> None:
        """An object's attributes that are code (its functions, bound methods, partials, classes),
        and the code inside its containers: its counters and lists may change as it is used."""
        try:
            space = vars(value)
        except TypeError:
            return
        if type(space) is not dict:
            return
        for key, item in list(space.items()):
            if key in _RUNTIME_STATE:
                continue
            if _code_like(item):
                self.fact("item", space, key, item, f"{label}.{key}")
                self.value(item, f"{label}.{key}", depth + 1)
            elif type(item) in (dict, list, tuple):
                self.value(item, f"{label}.{key}", depth + 1, code_only=True)
            elif hasattr(item, "__dict__") and _is_course_type(type(item)):
                self.fact("item", space, key, item, f"{label}.{key}")
                self.value(item, f"{label}.{key}", depth + 1)


def _stdlib_facts(module: types.ModuleType, facts: list[Fact]) -> None:
    """The functions and classes of a standard-library module, and the functions of its classes."""
    space = vars(module)
    name = module.__name__
    for key, value in list(space.items()):
        if name == "builtins":
            real = isinstance(value, types.BuiltinFunctionType) or (
                isinstance(value, type) and value.__module__ == "builtins"
            )
            if not real or key.startswith("_"):
                continue
            facts.append(("item", space, key, value, f"{name}.{key}"))
            continue
        if not _code_like(value):
            continue
        facts.append(("item", space, key, value, f"{name}.{key}"))
        if isinstance(value, types.FunctionType):
            facts.append(("attr", value, "__code__", value.__code__, f"{name}.{key}"))
            facts.append(("attr", value, "__defaults__", value.__defaults__, f"{name}.{key}"))
        elif isinstance(value, type) and value.__module__ == name:
            for attr, member in list(vars(value).items()):
                if attr in _VOLATILE or not isinstance(
                    member, types.FunctionType | staticmethod | classmethod | property
                ):
                    continue
                facts.append(("item", vars(value), attr, member, f"{name}.{key}.{attr}"))
                if isinstance(member, types.FunctionType):
                    facts.append(("attr", member, "__code__", member.__code__, f"{name}.{key}.{attr}"))


def _broken(fact: Fact) -> str | None:
    """None when `fact` still holds, else how it no longer does ('replaced', 'deleted', ...)."""
    kind, container, key, expected, _ = fact
    if kind == "item":
        now = container.get(key, _MISSING)
        if now is expected:
            return None
        return "deleted" if now is _MISSING else "replaced"
    if kind == "attr":
        now = getattr(container, key, _MISSING)
        if now is expected:
            return None
        if now is _MISSING:
            return "deleted"
        return "its code replaced" if key == "__code__" else "replaced"
    if kind == "index":
        try:
            return None if container[key] is expected else "changed in place"
        except IndexError:
            return "changed in place"
    if kind == "keys":
        if len(container) == len(expected) and expected.issuperset(container):
            return None
        if expected.issubset(container) and all(
            _submodule(container, k, key) for k in container if k not in expected
        ):
            return None  # a package whose submodule was imported since
        return "names added or deleted"
    if kind == "grow":
        return None if expected.issubset(container) else "entries deleted"
    if kind == "len":
        return None if len(container) == expected else "changed in place"
    if kind == "set":
        return None if frozenset(container) == expected else "changed in place"
    if kind == "added":
        if expected.issuperset(vars(container).keys()):
            return None
        new = [
            k
            for k, v in vars(container).items()
            if k not in expected and _code_like(v) and k not in _VOLATILE
        ]
        return f"given new {', '.join(new[:3])}" if new else None
    return None


def _submodule(space: dict, key: Any, package: Any) -> bool:
    value = space.get(key)
    return isinstance(value, types.ModuleType) and value.__name__ == f"{package}.{key}"


def _details(fact: Fact) -> list[str]:
    """Readable labels for a broken fact: which names were added or deleted in a namespace."""
    kind, container, package, expected, label = fact
    if kind == "keys":
        added = sorted(k for k in container if k not in expected and not _submodule(container, k, package))
        deleted = sorted(k for k in expected if k not in container)
        return [f"{label}.{k} (added)" for k in added[:4]] + [f"{label}.{k} (deleted)" for k in deleted[:4]]
    return []


_TESTS = HELPERS.parent / "tests"


def _from_tests() -> bool:
    """True when the code that asked (the first caller outside this module and `contextlib`) is a
    file of the course's tests/, not a notebook cell."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _PASSING_THROUGH:
        frame = frame.f_back
    if frame is None:
        return False
    filename = frame.f_code.co_filename
    if not (filename.startswith(_TESTS_PREFIX) and filename.endswith(".py")):
        return False
    try:
        return Path(filename).is_file()
    except (OSError, ValueError):
        return False


_TESTS_PREFIX = str(_TESTS) + "/"
_PASSING_THROUGH = frozenset({__file__, contextlib.__file__})


# -- the snapshot, the registry and the switch: kept in closures, not in module attributes ---------------
@dataclass(frozen=True)
class Registered:
    """An exercise's fields as they were when it was created, its class, and the opaque stand-in its
    public `checker` attribute holds (the checker itself is kept here only)."""

    lab: str
    key: str
    names: tuple[str, ...]
    checker: Any
    hints: tuple[str, ...]
    kind: type = object
    public: Any = None


LIBRARY_WATCHED = (
    "langgraph.pregel.main",
    "langgraph.pregel._algo",
    "langgraph.pregel._loop",
    "langgraph.pregel._runner",
    "langgraph.pregel._executor",
    "langgraph.pregel._read",
    "langgraph.pregel._write",
    "langgraph.pregel._io",
    "langgraph.pregel._call",
    "langgraph.pregel._retry",
    "langgraph.pregel._checkpoint",
    "langgraph.graph.state",
    "langgraph.graph._branch",
    "langgraph.graph._node",
    "langgraph.graph.message",
    "langgraph.channels.base",
    "langgraph.channels.binop",
    "langgraph.channels.last_value",
    "langgraph.channels.topic",
    "langgraph.channels.ephemeral_value",
    "langgraph.channels.named_barrier_value",
    "langgraph.types",
    "langgraph.config",
    "langgraph.errors",
    "langgraph.prebuilt.tool_node",
    "langgraph.prebuilt.chat_agent_executor",
    "langgraph.checkpoint.memory",
    "langgraph.checkpoint.base",
    "langgraph._internal._runnable",
    "langchain.agents.factory",
    "langchain.agents.middleware.types",
    "langchain_core.tools.base",
    "langchain_core.tools.structured",
    "langchain_core.tools.simple",
    "langchain_core.tools.convert",
    "langchain_core.runnables.base",
    "langchain_core.runnables.config",
    "langchain_core.messages.ai",
    "langchain_core.messages.tool",
    "langchain_core.messages.base",
    "langchain_core.language_models.chat_models",
    "langchain_core.callbacks.manager",
    "langchain_mcp_adapters.tools",
)
"""Library modules the course's scenarios and checks drive (Pregel's `invoke`/`stream`/`ainvoke`/
`astream`, its loop, runner and algorithm; `StateGraph.compile`; `ToolNode`; `create_agent`;
`InMemorySaver`; `BaseTool.invoke`/`ainvoke`; chat models, messages, callbacks): their functions and
classes, and the functions of those classes, are verified like the standard library's. A deeper
internal (a module not listed) is out of reach (labs/README.md)."""


def _library_facts(module: types.ModuleType) -> tuple[Any, ...]:
    """One library module's functions and classes, as a few batches verified at C speed: (dict, keys,
    values, labels) for each namespace, (functions, code objects, labels) for their code. A function
    a notebook cell defined and put there before this snapshot is a suspect, named by `changes`."""
    name = module.__name__
    short = name
    batches: list[tuple[Any, ...]] = []
    functions: list[Any] = []
    labels: list[str] = []
    suspects: list[str] = []

    def batch(space: Any, prefix: str, kinds: tuple[type, ...]) -> None:
        keys = tuple(k for k, v in space.items() if isinstance(v, kinds) and k not in _VOLATILE)
        if not keys:
            return
        values = tuple(space[k] for k in keys)
        batches.append((space, keys, values, tuple(f"{prefix}.{k}" for k in keys)))
        for key, value in zip(keys, values, strict=True):
            fn = value.__func__ if isinstance(value, staticmethod | classmethod) else value
            if isinstance(fn, types.FunctionType):
                functions.append(fn)
                labels.append(f"{prefix}.{key}")
                if fn.__module__ == "__main__" or _CELL_FILE.search(fn.__code__.co_filename):
                    suspects.append(f"{prefix}.{key}")

    space = vars(module)
    batch(space, short, (types.FunctionType, type))
    for value in list(space.values()):
        if isinstance(value, type) and value.__module__ == name:
            batch(vars(value), value.__qualname__, (types.FunctionType, staticmethod, classmethod, property))
    codes = tuple(fn.__code__ for fn in functions)
    return (module, tuple(batches), (tuple(functions), codes, tuple(labels)), tuple(suspects))


_CELL_FILE = re.compile(r"(ipykernel_\d+[/\\]\d+\.py$)|(^<ipython-input-)|(^<cell)")


def _make_guard() -> tuple[Any, ...]:
    facts_by_module: dict[str, tuple[types.ModuleType, list[Fact]]] = {}
    library: dict[str, tuple[Any, ...]] = {}
    exercises: dict[int, tuple[Any, Registered, list[Fact]]] = {}
    state = {"enforce": True}
    lock = threading.RLock()
    # what verification runs, captured now: a notebook that rebinds a name of this module (even
    # `guard.changes` itself, through `exec`) changes a fact these verify, never these
    broken, details, walker, stdlib_facts, library_facts = (
        _broken,
        _details,
        _Walker,
        _stdlib_facts,
        _library_facts,
    )
    is_course_name, is_course_file, watched, other_lab = (
        _is_course_module_name,
        _is_course_file,
        _watched,
        _OTHER_LAB,
    )
    from_tests, missing, modules = _from_tests, _MISSING, sys.modules
    library_names = LIBRARY_WATCHED
    stdlib_names = STDLIB_WATCHED
    import operator as _operator

    is_, itemgetter, attrgetter = _operator.is_, _operator.itemgetter, _operator.attrgetter
    all_, map_, getattr_, type_, tuple_, vars_, len_ = all, map, getattr, type, tuple, vars, len
    code_of = attrgetter("__code__")

    def take_library() -> None:
        for name in library_names:
            if name not in library:
                module = modules.get(name)
                if module is not None:
                    library[name] = library_facts(module)

    def take(name: str) -> None:
        """Snapshot module `name` (and, once each, the watched modules it refers to)."""
        module = modules.get(name)
        if module is None:
            return
        with lock:
            pending = [name]
            while pending:
                current = pending.pop()
                module = modules.get(current)
                if module is None:
                    continue
                if current in facts_by_module and facts_by_module[current][0] is not module:
                    continue  # another copy under the same name (a grading's pristine one): not ours
                facts: list[Fact] = []
                if is_course_name(current):
                    met: set[str] = set()
                    walker(facts, met).module(module)
                    pending += [m for m in met if m not in facts_by_module and m != current and watched(m)]
                else:
                    stdlib_facts(module, facts)
                facts_by_module[current] = (module, facts)
            for name in stdlib_names:
                if name in modules and name not in facts_by_module:
                    stdlib: list[Fact] = []
                    stdlib_facts(modules[name], stdlib)
                    facts_by_module[name] = (modules[name], stdlib)
            take_library()

    def untaken() -> list[str]:
        return [
            name
            for name, module in list(modules.items())
            if is_course_name(name)
            and name not in facts_by_module
            and module is not None
            and is_course_file(getattr(module, "__file__", "") or "")
            and not name.endswith("__main__")
        ]

    def register(exercise: Any, public: Any = None) -> None:
        """Keep `exercise`'s fields, its class and its checker here; its `checker` attribute becomes
        `public` (an opaque stand-in), so nothing the notebook holds leads to the checker's data."""
        fields = Registered(
            exercise.lab,
            exercise.key,
            tuple(exercise.names),
            exercise.checker,
            tuple(exercise.hints),
            type(exercise),
            public if public is not None else exercise.checker,
        )
        facts: list[Fact] = []
        walk = walker(facts, set())
        walk.value(exercise.checker, f"{exercise.key}'s checker", 1)
        with lock:
            exercises[id(exercise)] = (exercise, fields, facts)
        if public is not None:
            exercise.checker = public

    def registered(exercise: Any) -> Registered | None:
        entry = exercises.get(id(exercise))
        return entry[1] if entry is not None and entry[0] is exercise else None

    def library_changes() -> list[str]:
        found: list[str] = []
        for _, batches, (functions, codes, labels), suspects in list(library.values()):
            found += [f"{s} (changed before the checks were imported)" for s in suspects]
            for space, keys, values, names in batches:
                try:
                    now = itemgetter(*keys)(space) if len_(keys) > 1 else (space[keys[0]],)
                except KeyError:
                    now = tuple_(space.get(k, missing) for k in keys)
                if all_(map_(is_, now, values)):
                    continue
                found += [
                    f"{label} ({'deleted' if got is missing else 'replaced'})"
                    for label, got, was in zip(names, now, values, strict=True)
                    if got is not was
                ]
            if functions and not all_(map_(is_, map_(code_of, functions), codes)):
                found += [
                    f"{label} (its code replaced)"
                    for label, fn, code in zip(labels, functions, codes, strict=True)
                    if fn.__code__ is not code
                ]
        return found

    def changes(exercise: Any = None) -> list[str]:
        """What no longer is as it was imported: readable labels, most specific first."""
        if not state["enforce"]:
            return []
        for name in untaken():  # a course module imported before the guard: trusted on first sight
            take(name)
        if len_(library) < len_(library_names):
            take_library()
        found: list[str] = []
        with lock:
            entry = exercises.get(id(exercise)) if exercise is not None else None
            lab = f"helpers.labs.lab{entry[1].lab}" if entry is not None else None
            # another lab's module is none of this check's business (a kernel imports one lab)
            groups = [
                facts
                for name, (_, facts) in facts_by_module.items()
                if lab is None or name == lab or not other_lab.fullmatch(name)
            ]
        if entry is not None and entry[0] is exercise:
            _, fields, facts = entry
            groups.append(facts)
            if type_(exercise) is not fields.kind:
                found.append(f"{fields.key}.__class__ (replaced)")
            space = vars_(exercise) if type_(getattr_(exercise, "__dict__", None)) is dict else {}
            for attr in ("lab", "key", "names", "checker", "hints"):
                now = space.get(attr, missing)
                was = fields.public if attr == "checker" else getattr_(fields, attr)
                if now is not was and not (type_(was) is tuple and type_(now) is tuple and now == was):
                    found.append(f"{fields.key}.{attr} (replaced)")
            extra = [k for k in space if k not in ("lab", "key", "names", "checker", "hints", "passed")]
            found += [f"{fields.key}.{k} (added)" for k in extra]
        for facts in groups:
            for fact in facts:
                kind = fact[0]
                if kind == "item":
                    if fact[1].get(fact[2], missing) is fact[3]:
                        continue
                elif kind == "attr" and getattr_(fact[1], fact[2], missing) is fact[3]:
                    continue
                how = broken(fact)
                if how is None:
                    continue
                detail = details(fact)
                found += detail or [f"{fact[4]} ({how})"]
        found += library_changes()
        unique = list(dict.fromkeys(found))
        return unique

    def enforce(on: bool) -> bool:
        """Turn verification on, or (from the course's tests only) off; returns the old setting."""
        if not on and not from_tests():
            raise PermissionError("only the course's tests turn the checks' verification off")
        old = state["enforce"]
        state["enforce"] = bool(on)
        return old

    def enforcing() -> bool:
        return state["enforce"]

    return take, register, registered, changes, enforce, enforcing


_OTHER_LAB = re.compile(r"helpers\.labs\.lab\d\d")


def _watched(name: str) -> bool:
    if _is_course_module_name(name):
        module = sys.modules.get(name)
        return module is not None and _is_course_file(getattr(module, "__file__", "") or "")
    return name in STDLIB_WATCHED


take, register, registered, changes, _enforce, enforcing = _make_guard()


@contextlib.contextmanager
def enforced(on: bool = True) -> Iterator[None]:
    """`with enforced():` verification on (or, from the course's tests only, off) inside the block,
    as it was after."""
    old = _enforce(on)
    try:
        yield
    finally:
        _enforce(old)


def relax_for_tests() -> None:
    """The course's own tests patch limits and draws on purpose: verification is off for them
    (tests/lab_checks.py calls this) except inside `with enforced():`. Called from anywhere but a
    file of tests/, it does nothing."""
    with contextlib.suppress(PermissionError):
        _enforce(False)


# -- snapshot each course module when its import finishes -------------------------------------------------
class _SnapshotLoader(importlib.abc.Loader):
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.inner.exec_module(module)
        take(module.__name__)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, is_package, ... for tools
        return getattr(self.inner, name)


class _SnapshotFinder(importlib.abc.MetaPathFinder):
    """Finds course modules as Python would, and snapshots each when its import finishes."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if not _is_course_module_name(name) or name == COURSE_PREFIX:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not _is_course_file(spec.origin or ""):
            return None
        spec.loader = _SnapshotLoader(spec.loader)
        return spec


def install() -> None:
    """Snapshot the course modules imported so far and every one imported later; record the cells
    an IPython kernel runs from now on (for `scan`)."""
    if not any(isinstance(f, _SnapshotFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SnapshotFinder())
    for name in STDLIB_WATCHED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    take("helpers.labs")
    _record_cells()


# -- a private random generator ------------------------------------------------------------------------
def _private_random_class() -> type:
    """`random.Random` with its own copies of every method, each reading a private copy of the
    `random` module's globals: a later patch of `random` (its functions, `random.Random`'s methods,
    the helpers they call) does not reach a generator made from it."""
    import random

    private_globals = dict(vars(random))
    members: dict[str, Any] = {}
    for key, value in vars(random.Random).items():
        if isinstance(value, types.FunctionType):
            members[key] = types.FunctionType(
                value.__code__, private_globals, value.__name__, value.__defaults__, value.__closure__
            )
            members[key].__kwdefaults__ = value.__kwdefaults__
            members[key].__qualname__ = value.__qualname__
        elif isinstance(value, classmethod | staticmethod) and isinstance(value.__func__, types.FunctionType):
            fn = value.__func__
            copy = types.FunctionType(
                fn.__code__, private_globals, fn.__name__, fn.__defaults__, fn.__closure__
            )
            members[key] = type(value)(copy)
    members.pop("__init_subclass__", None)
    members["__module__"] = __name__
    members["__doc__"] = "A random generator the check owns (see `rng`)."
    return type("Random", (random.Random,), members)


_RANDOM = _private_random_class()


def rng(seed: Any = None) -> Any:
    """A fresh random generator the check owns: draw every scenario from it. Patching the `random`
    module (its functions, `random.Random`'s methods) from a notebook does not reach it."""
    return _RANDOM(seed)


# -- the learner's code: what it reaches of the checks --------------------------------------------------
REACH_IN = frozenset(
    {
        "__globals__",
        "__closure__",
        "__code__",
        "__defaults__",
        "__kwdefaults__",
        "__builtins__",
        "__subclasses__",
        "__wrapped__",
        "__self__",
        "__func__",
        "cell_contents",
        "f_globals",
        "f_locals",
        "f_back",
        "f_builtins",
        "tb_frame",
        "gi_frame",
        "cr_frame",
        "ag_frame",
    }
)
"""Attributes that reach into a function's globals, closure, bound object or a frame: no lab exercise
needs them, and through them any of a check's objects can be read or changed."""
_REACHES = "reaches into a function's globals, closure, bound object or frames"
RUNS_CODE = frozenset({"exec", "eval", "compile", "execfile", "breakpoint"})
"""Calls that run code the scan cannot read (built as a string)."""
RUNS_CELLS = frozenset({"run_cell", "run_cell_async", "run_code", "safe_execfile", "safe_run_module"})
"""IPython's methods that run a string or a file as a cell (`get_ipython().run_cell(...)`)."""
RUNS_MAGICS = frozenset({"run", "load", "macro", "rerun", "recall"})
"""Magics that run (or bring back to run) code the cells do not show: `%run file.py`, `%load`."""
GETTERS = frozenset(
    {"getattr", "setattr", "delattr", "__getattribute__", "__getattr__", "__setattr__", "__delattr__"}
)
"""Calls that name an attribute in their second argument: a name built at run time hides which."""
GRADING_NAME = re.compile(r"_(grade|pristine)_[0-9a-f]*")
"""The names of what `make labs` puts in a graded notebook's globals: a learner cell has no use for them."""
EXERCISE_API = frozenset({"check", "hint", "solution", "key", "lab", "passed"})
"""What a notebook uses of an exercise object (`q1.check()`, `q1.hint(2)`, `q1.solution()`)."""
PRIVATE_MODULES = frozenset({"helpers.labs.guard", "helpers.labs.build", "helpers.labs.__main__"})
"""Course modules a notebook has no use for at all."""
FRAME_CALLS = {
    "sys": frozenset({"_getframe", "modules", "settrace", "setprofile", "_current_frames"}),
    "gc": frozenset({"get_objects", "get_referrers", "get_referents"}),
    "inspect": frozenset(
        {"currentframe", "stack", "trace", "getouterframes", "getinnerframes", "getclosurevars"}
    ),
    "importlib": frozenset({"reload", "import_module", "__import__"}),
    "threading": frozenset({"settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads"}),
}
"""Calls that reach objects the learner was not handed (frames, every live object, `sys.modules`)."""
_SCANNED_ROOTS = ("helpers.labs", "helpers.practice")


@dataclass(frozen=True)
class Finding:
    """One place in the learner's code that reads or writes a check's internals."""

    cell: int  # 1-based position among the scanned sources
    line: int
    code: str  # the line, stripped
    what: str  # e.g. "`lab01.ANSWERS` is not one of lab01's public names"
    exercise: str | None = None  # "q2" when the finding concerns only that exercise


def public_names(module_name: str) -> frozenset[str] | None:
    """What a notebook may use of course module `module_name` (its `__all__`, plus what the lab's
    own solution notebook imports from it); None when the module is not a check module."""
    if module_name in PRIVATE_MODULES:
        return frozenset()
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - not importable: no public names to offer
            return frozenset()
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    extra: set[str] = set()
    if module_name == "helpers.labs":
        extra |= {n for n in vars(module) if re.fullmatch(r"lab\d\d|predict", n)}
        extra |= {
            "NAMES",
            "rng",
            "plain",
            "plain_problem",
            "record_failure",
            "solution_namespace",
            "run_in_fresh_loop",
            "distinct",
            "CheckStopped",
            "LearnerRaised",
        }
        extra |= _lab_module_names()
    match = re.fullmatch(r"helpers\.labs\.lab(\d\d)", module_name)
    if match:
        extra |= _solution_imports(match[1], module_name)
    return frozenset(names) | extra


@functools.cache
def _lab_module_names() -> frozenset[str]:
    return frozenset(p.stem for p in (HELPERS / "labs").glob("lab[0-9][0-9].py")) | {"predict"}


@functools.cache
def _solution_imports(number: str, module_name: str) -> frozenset[str]:
    """The names lab `number`'s own notebooks import from its check module (its Setup cell)."""
    labs = HELPERS.parent / "labs"
    from helpers.labs import NAMES

    stem = NAMES.get(number)
    names: set[str] = set()
    for path in (labs / "solutions" / f"{stem}.ipynb", labs / f"{stem}.ipynb"):
        if not stem or not path.exists():
            continue
        try:
            import json

            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError):
            continue
        for cell in cells:
            if cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            source = source if isinstance(source, str) else "".join(source)
            tree = _parse(source)
            for node in ast.walk(tree) if tree else ():
                if isinstance(node, ast.ImportFrom) and node.module == module_name:
                    names |= {a.name for a in node.names if a.name != "*"}
        break  # the solution when there is one; else the committed starter
    return frozenset(names)


def _parse(source: str) -> ast.Module | None:
    """A cell's Python: IPython's magics, shell escapes and help lines left out."""
    lines = []
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#")):
            lines.append("")
        else:
            lines.append(line)
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        try:
            from IPython.core.inputtransformer2 import TransformerManager

            return ast.parse(TransformerManager().transform_cell(source))
        except Exception:  # noqa: BLE001 - a cell that does not parse ran nothing
            return None


def _dotted(node: ast.AST) -> list[str] | None:
    """`a.b.c` → ['a', 'b', 'c'] (a Name followed by attributes), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _course_module(dotted: str) -> str | None:
    """The longest prefix of `dotted` that is a course module a check is made of."""
    parts = dotted.split(".")
    for end in range(len(parts), 1, -1):
        name = ".".join(parts[:end])
        if name.startswith(_SCANNED_ROOTS) and (name in sys.modules or _module_file(name)):
            return name
    return None


@functools.cache
def _module_file(name: str) -> bool:
    relative = Path(*name.split("."))
    root = HELPERS.parent
    return (root / relative).with_suffix(".py").exists() or (root / relative / "__init__.py").exists()


class _Scan(ast.NodeVisitor):
    def __init__(self, aliases: dict[str, str], cell: int, lines: list[str]) -> None:
        self.aliases = aliases
        self.cell = cell
        self.lines = lines
        self.found: list[Finding] = []

    def add(self, node: ast.AST, what: str, exercise: str | None = None) -> None:
        line = getattr(node, "lineno", 0)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.found.append(Finding(self.cell, line, code, what, exercise))

    def resolve(self, parts: list[str]) -> str | None:
        base = self.aliases.get(parts[0])
        return ".".join([base, *parts[1:]]) if base else None

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.module_use(node, alias.name)
            if alias.name.split(".")[0] == "ctypes":
                self.add(node, "`ctypes` reaches any object in memory")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self.module_use(node, module)
        if _course_module(module + ".x") == module or module in ("helpers.labs", "helpers.practice"):
            public = public_names(module)
            for alias in node.names:
                full = f"{module}.{alias.name}"
                if alias.name == "*" or (public is not None and alias.name in public):
                    continue
                if _course_module(full) == full and full not in PRIVATE_MODULES:
                    continue  # a submodule: its names are checked where they are used
                self.add(node, f"`{alias.name}` is not one of {_short(module)}'s public names")
        if module == "importlib":
            for alias in node.names:
                if alias.name in FRAME_CALLS["importlib"]:
                    self.add(node, f"`importlib.{alias.name}` re-runs or fetches a check module")
        if module in ("gc", "sys", "inspect") and any(a.name in FRAME_CALLS[module] for a in node.names):
            self.add(node, f"`{module}` calls reach objects the exercise does not hand you")

    def module_use(self, node: ast.AST, module: str) -> None:
        if module in PRIVATE_MODULES:
            self.add(node, f"`{module}` is the course's own machinery, not part of the lab")

    # reading and writing
    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in REACH_IN:
            self.add(node, f"`.{node.attr}` {_REACHES}")
        parts = _dotted(node)
        if parts:
            self.chain(node, parts, write=isinstance(node.ctx, ast.Store | ast.Del))
        self.generic_visit(node)

    def chain(self, node: ast.AST, parts: list[str], *, write: bool) -> None:
        full = self.resolve(parts)
        if full is None:
            return
        root = full.split(".")[0]
        if root in FRAME_CALLS and len(full.split(".")) > 1 and full.split(".")[1] in FRAME_CALLS[root]:
            self.add(node, f"`{root}.{full.split('.')[1]}` reaches objects the exercise does not hand you")
        module = _course_module(full)
        if module is None:
            if write and len(parts) == 2:
                self.add(node, f"your code changes `{'.'.join(parts)}` (a name you imported)")
            return
        rest = full[len(module) + 1 :].split(".") if full != module else []
        if not rest:
            return
        name = rest[0]
        public = public_names(module) or frozenset()
        label = f"{_short(module)}.{name}"
        if module in PRIVATE_MODULES or name not in public:
            if (
                _course_module(f"{module}.{name}") == f"{module}.{name}"
                and f"{module}.{name}" not in PRIVATE_MODULES
            ):
                return  # a submodule, reached by attribute: its own names are checked
            self.add(node, f"`{label}` is not one of {_short(module)}'s public names")
            return
        target = getattr(sys.modules.get(module), name, None)
        api = _api(target)
        if api is not None and len(rest) > 1:
            if rest[1] not in api or write:
                how = "changes" if write else "reads"
                exercise = name if type(target).__name__ == "Exercise" else None
                self.add(
                    node, f"your code {how} `{name}.{rest[1]}`, the check's own field", exercise=exercise
                )
            return
        if write:
            self.add(
                node,
                f"your code changes `{label}{'.' + '.'.join(rest[1:]) if rest[1:] else ''}`, the check's own",
            )
        elif len(rest) > 1 and rest[1] == "__dict__":
            self.add(node, f"`{label}.__dict__` reads the check's internals")

    def visit_Name(self, node: ast.Name) -> None:
        if GRADING_NAME.match(node.id):
            self.add(node, f"`{node.id}` is the grading's own machinery, not part of the lab")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and GRADING_NAME.match(node.value):
            self.add(node, f"`{node.value}` names the grading's own machinery, not part of the lab")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.built_name(node, _string_pieces(node))
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.built_name(node, _string_pieces(node))
        self.generic_visit(node)

    def built_name(self, node: ast.AST, pieces: list[str]) -> None:
        """A dunder attribute name built from strings (`"__clo" + "sure__"`): a name the scan would
        have refused written out, hidden."""
        if len(pieces) < 2:
            return
        if pieces[0].startswith("__") or pieces[-1].endswith("__") or any(p == "_" for p in pieces):
            self.add(node, "a dunder name built from pieces of strings hides which attribute it reads")

    def visit_Call(self, node: ast.Call) -> None:
        func = _dotted(node.func)
        name = func[-1] if func else None
        if func and name in RUNS_CODE and (len(func) == 1 or func[0] in ("builtins", "__builtins__")):
            self.add(node, f"`{name}(...)` runs code the check cannot read: write it in the cell itself")
        elif isinstance(node.func, ast.Attribute) and node.func.attr in RUNS_CELLS:
            self.add(node, f"`.{node.func.attr}(...)` runs code the check cannot read")
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("run_line_magic", "run_cell_magic"):
            magic = node.args[0] if node.args else None
            text = magic.value if isinstance(magic, ast.Constant) and isinstance(magic.value, str) else None
            if text is None or text in RUNS_MAGICS:
                self.add(node, f"`%{text or '…'}` runs code the check cannot read")
        attr = None
        if name in GETTERS:
            # getattr(x, NAME); object.__getattribute__(x, NAME); x.__getattribute__(NAME)
            bound = name.startswith("__") and len(node.args) == 1
            attr = node.args[0] if bound else (node.args[1] if len(node.args) > 1 else None)
        if attr is not None:
            literal = isinstance(attr, ast.Constant) and isinstance(attr.value, str)
            if not literal:
                self.add(node, f"`{name}(...)` with a name built at run time: the check cannot read which")
            elif name.startswith("__") and attr.value in REACH_IN:
                self.add(node, f"`{attr.value}` {_REACHES}")
        if name in ("attrgetter", "methodcaller") and node.args:
            for arg in node.args:
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    self.add(
                        node, f"`{name}(...)` with a name built at run time: the check cannot read which"
                    )
                    break
                if any(part in REACH_IN for part in arg.value.split(".")):
                    self.add(node, f"`{arg.value}` {_REACHES}")
                    break
        if func and len(func) == 1 and name in ("setattr", "delattr", "vars", "getattr") and node.args:
            target = _dotted(node.args[0])
            full = self.resolve(target) if target else None
            if full is not None:
                attr = node.args[1] if len(node.args) > 1 else None
                text = attr.value if isinstance(attr, ast.Constant) and isinstance(attr.value, str) else None
                module = _course_module(full)
                if name == "getattr" and text is not None and module is not None:
                    self.chain(node, [*target, text], write=False)
                elif name == "getattr" and text is not None:
                    if text in REACH_IN:
                        self.add(node, f"`{text}` {_REACHES}")
                elif module is not None or name in ("setattr", "delattr"):
                    what = "changes" if name in ("setattr", "delattr") else "reads"
                    exercise = None
                    target_obj = getattr(sys.modules.get(module or ""), full.split(".")[-1], None)
                    if type(target_obj).__name__ == "Exercise":
                        exercise = full.split(".")[-1]
                    self.add(
                        node, f"`{name}(...)` on `{'.'.join(target)}` {what} a check's internals", exercise
                    )
            elif name == "getattr" and len(node.args) > 1:
                attr = node.args[1]
                if isinstance(attr, ast.Constant) and attr.value in REACH_IN:
                    self.add(node, f"`{attr.value}` {_REACHES}")
        if func and len(func) == 1 and name in ("__import__", "reload", "import_module"):
            if name != "import_module" or self.aliases.get(name, "").startswith("importlib"):
                self.add(node, f"`{name}(...)` re-runs or fetches a module behind the notebook's imports")
        self.generic_visit(node)


def _string_pieces(node: ast.AST) -> list[str]:
    """The string constants `node` concatenates (`+`, `%`, an f-string), in order; [] when `node` is
    not built of strings (`1 + 2`, a name plus a name)."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        left, right = _string_pieces(node.left), _string_pieces(node.right)
        if not (left or right):
            return []
        return (left or ["…"]) + (right or ["…"])
    if isinstance(node, ast.JoinedStr):
        pieces = []
        for value in node.values:
            pieces += (
                [value.value] if isinstance(value, ast.Constant) and isinstance(value.value, str) else ["…"]
            )
        return pieces if any(p != "…" for p in pieces) else []
    return []


def _api(target: Any) -> frozenset[str] | None:
    """What a notebook may use of a course object it is handed: its class's `__lab_api__` (an
    exercise: `check`, `hint`, `solution`, ...; a predict-and-check lab: `show`, `starter`), or None
    for an object with no such list (a tool, a recorder: the learner's to use)."""
    kind = type(target)
    if not _is_course_type(kind):
        return None
    api = getattr(kind, "__lab_api__", None)
    if kind.__name__ == "Exercise" and api is None:
        return EXERCISE_API
    return frozenset(api) if api is not None else None


def _aliases(trees: Iterable[ast.Module | None]) -> dict[str, str]:
    """Every name an import binds, in any of the cells: name → the dotted thing it stands for."""
    aliases: dict[str, str] = {}
    for tree in trees:
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    # simple aliases of what was imported: `ex = q1`, `ex = [q1][0]`, `a, b = q1, q2`, `for x in (q1, q2)`
    pairs = [pair for tree in trees for node in (ast.walk(tree) if tree else ()) for pair in _bindings(node)]
    for _ in range(4):
        grew = False
        for target, value in pairs:
            if target in aliases:
                continue
            resolved = _resolve_expr(value, aliases)
            if resolved is not None:
                aliases[target] = resolved
                grew = True
        if not grew:
            break
    return aliases


def _bindings(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(name, expression) for each simple binding `node` makes: an assignment (also to a tuple of
    names from a tuple of values), a walrus, a `for` over a literal list or tuple, a `with ... as`."""
    found: list[tuple[str, ast.AST]] = []

    def bind(target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name):
            found.append((target.id, value))
        elif isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
            for t, v in zip(target.elts, value.elts, strict=False):
                bind(t, v)

    if isinstance(node, ast.Assign):
        for target in node.targets:
            bind(target, node.value)
    elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
        bind(node.target, node.value)
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension) and isinstance(
        node.iter, ast.Tuple | ast.List
    ):
        for item in node.iter.elts:
            bind(node.target, item)
    elif isinstance(node, ast.With | ast.AsyncWith):
        for item in node.items:
            if item.optional_vars is not None:
                bind(item.optional_vars, item.context_expr)
    return found


def _resolve_expr(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The dotted thing an expression stands for when it is an imported name, an attribute of one,
    an item of a literal list or tuple of them, or `getattr(x, "literal")`; else None."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve_expr(node.value, aliases)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Tuple | ast.List):
        index = node.slice
        if isinstance(index, ast.Constant) and type(index.value) is int:
            items = node.value.elts
            if -len(items) <= index.value < len(items):
                return _resolve_expr(items[index.value], aliases)
        resolved = [_resolve_expr(item, aliases) for item in node.value.elts]
        return next((r for r in resolved if r), None)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        base = _resolve_expr(node.args[0], aliases)
        return f"{base}.{node.args[1].value}" if base else None
    return None


@functools.lru_cache(maxsize=512)
def _parsed(source: str) -> ast.Module | None:
    return _parse(source)


GRADING_CELLS = (
    re.compile(
        r"# toolnode-lab grading: [^\n]*\n"
        r"from helpers\.labs\.build import pristine_checks as _pristine_(?P<t>[0-9a-f]{16})\n"
        r"_pristine_(?P=t)\('\d\d', '(?P=t)', \{(\"[\w/.-]+\": \"[0-9a-f]{64}\"(, )?)*\}, globals\(\)\)\n"
        r"del _pristine_(?P=t)\n?"
    ),
    re.compile(r"_grade_[0-9a-f]{16}\('\d\d', 'q\d+', globals\(\)\)\n?"),
    re.compile(
        r"from helpers\.labs\.build import grade_exercise as __grade\n"
        r"__grade\('\d\d', 'q\d+', globals\(\)\)\n?"
    ),
)
"""The cells `make labs` adds to a notebook it grades (helpers/labs/build.py): harmless whoever runs
them, so a scan skips them."""


_MAGIC_LINE = re.compile(r"^\s*%{1,2}(?P<name>\w+)")


def scan(sources: Iterable[str]) -> list[Finding]:
    """Every place in `sources` (a notebook's code cells, or the cells a kernel ran, in order) that
    reads or writes a check's internals. `Finding.cell` counts `sources` from 1."""
    sources = [s if isinstance(s, str) else "" for s in sources]
    sources = ["" if any(p.fullmatch(s) for p in GRADING_CELLS) else s for s in sources]
    trees = [_parsed(s) if s.strip() else None for s in sources]
    aliases = _aliases(trees)
    found: list[Finding] = []
    for number, (source, tree) in enumerate(zip(sources, trees, strict=True), 1):
        lines = source.splitlines()
        for line_number, line in enumerate(lines, 1):
            magic = _MAGIC_LINE.match(line)
            if magic and magic["name"] in RUNS_MAGICS:
                what = f"`%{magic['name']}` runs code the check cannot read"
                found.append(Finding(number, line_number, line.strip(), what))
        if tree is None:
            continue
        visitor = _Scan(aliases, number, lines)
        visitor.visit(tree)
        found += visitor.found
    return list(dict.fromkeys(found))


# -- the cells a kernel ran -------------------------------------------------------------------------------
def _make_cells() -> tuple[Any, Any]:
    seen: list[str] = []
    state = {"hooked": False}

    def record() -> None:
        if state["hooked"]:
            return
        shell = _shell()
        if shell is None:
            return
        history = shell.user_ns.get("In")
        if isinstance(history, list):
            seen.extend(s for s in history if isinstance(s, str))

        def pre_run_cell(info: Any) -> None:
            raw = getattr(info, "raw_cell", None)
            if isinstance(raw, str):
                seen.append(raw)

        with contextlib.suppress(Exception):
            shell.events.register("pre_run_cell", pre_run_cell)
            state["hooked"] = True

    def cells() -> list[str]:
        """The cells this kernel ran, in order (recorded privately, and IPython's `In`)."""
        shell = _shell()
        history = shell.user_ns.get("In") if shell is not None else None
        extra = [s for s in history if isinstance(s, str)] if isinstance(history, list) else []
        return list(dict.fromkeys([*seen, *extra]))

    return record, cells


def _shell() -> Any:
    module = sys.modules.get("IPython")
    if module is None:
        return None
    try:
        shell = module.get_ipython()
    except Exception:  # noqa: BLE001 - no shell
        return None
    return shell if shell is not None and hasattr(shell, "user_ns") else None


_record_cells, kernel_cells = _make_cells()


__all__: list[str] = []  # nothing here is for a notebook
_ = builtins  # the real builtins are watched through STDLIB_WATCHED
