"""Which test modules a run can leave unimported, read from their source.

pytest imports every test module before `-m` deselects anything, so
`make test-fast` paid for importing the modules whose every test is `slow`,
`browser` or `model` (their imports pull in Playwright, the daemon's helpers,
the benchmarks): about a third of each worker's 16-18 CPU s of collection.
``leaves_out`` answers, from the module's syntax tree alone, whether a run
would deselect every test in a module anyway; then conftest's
``pytest_ignore_collect`` skips the import. The tests selected are the same
(tests/test_suite_rules.py compares the collected ids with and without it).

Every answer is on the safe side: when the source does not say for sure,
the module is imported as before.

- **The marks every test has for sure** are the module's ``pytestmark``:
  ``pytest.mark.NAME`` (called or not), a list or tuple of those, a name
  bound to such a value in this module, or one imported from another test
  module (``from tests.test_x import pytestmark``, ``from tests import
  test_x as m`` then ``m.pytestmark``). Where a top-level ``if`` assigns it
  in both branches, only the marks both branches share count. Anything else
  counts as no mark at all.
- **A mark a test might have** is any whose name appears, after a dot or
  quoted, in the source of the module or of a test module it imports from:
  only then can a class, a function or a ``pytest.param`` carry it.

A module is left out when the `-m` expression is false for its sure marks
whatever the other marks of a test are, or when the run keeps only tests
with a mark (``--serial=only``: ``serial``) that no test in it can have.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from _pytest.mark.expression import Expression

TESTS = Path(__file__).resolve().parent


@cache
def _tree(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None  # let pytest import it and report the error itself


def _test_module(dotted: str | None) -> Path | None:
    """tests.test_x -> tests/test_x.py (only this package's own modules)."""
    if not dotted or not dotted.startswith("tests."):
        return None
    path = TESTS / (dotted.removeprefix("tests.").replace(".", "/") + ".py")
    return path if path.is_file() else None


def _marks_of(node: ast.expr, names: dict[str, frozenset[str]], modules: dict[str, Path]) -> frozenset[str]:
    """The marks ``node`` surely carries when assigned to ``pytestmark``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        owner = node.value
        if isinstance(owner, ast.Attribute) and owner.attr == "mark" and isinstance(owner.value, ast.Name):
            return frozenset({node.attr}) if owner.value.id == "pytest" else frozenset()
        if isinstance(owner, ast.Name) and owner.id in modules:
            return sure_marks(modules[owner.id], node.attr)
        return frozenset()
    if isinstance(node, ast.Name):
        return names.get(node.id, frozenset())
    if isinstance(node, ast.Starred):
        return _marks_of(node.value, names, modules)
    if isinstance(node, ast.List | ast.Tuple):
        return frozenset().union(*(_marks_of(element, names, modules) for element in node.elts))
    return frozenset()


def _bound_names(statement: ast.stmt) -> set[str]:
    """Every name a statement binds at the module's level (to forget them).
    Not inside a function, class or lambda: what their bodies bind is theirs
    (walking every test function's body made this 3 of a worker's 15 s of
    collection)."""
    bound: set[str] = set()
    waiting: list[ast.AST] = [statement]
    while waiting:
        node = waiting.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
            waiting += node.decorator_list  # a walrus there binds at this level
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        waiting += ast.iter_child_nodes(node)
    return bound


def _walk(
    statements: Iterable[ast.stmt], names: dict[str, frozenset[str]], modules: dict[str, Path]
) -> dict[str, frozenset[str]]:
    names = dict(names)
    for statement in statements:
        if isinstance(statement, ast.Assign):
            value = _marks_of(statement.value, names, modules)
            for target in statement.targets:
                for bound in _bound_names(ast.Expr(target)):
                    names[bound] = value if isinstance(target, ast.Name) else frozenset()
        elif isinstance(statement, ast.ImportFrom):
            source = _test_module(statement.module)
            for alias in statement.names:
                local = alias.asname or alias.name
                if alias.name == "*":
                    names.clear()  # anything may have been replaced
                    modules.clear()
                    continue
                names.pop(local, None)
                modules.pop(local, None)
                if source is not None:
                    names[local] = sure_marks(source, alias.name)
                elif statement.module == "tests" and (module := _test_module(f"tests.{alias.name}")):
                    modules[local] = module
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                local = alias.asname or alias.name.split(".")[0]
                names.pop(local, None)
                modules.pop(local, None)
                if alias.asname and (module := _test_module(alias.name)):
                    modules[alias.asname] = module
        elif isinstance(statement, ast.If):
            taken, other = _walk(statement.body, names, dict(modules)), _walk(statement.orelse, names, dict(modules))
            for name in set(taken) | set(other):
                names[name] = taken.get(name, frozenset()) & other.get(name, frozenset())
        else:
            for bound in _bound_names(statement):
                names.pop(bound, None)
                modules.pop(bound, None)
    return names


@cache
def sure_marks(path: Path, name: str = "pytestmark") -> frozenset[str]:
    """The marks the module-level ``name`` (by default ``pytestmark``) of
    ``path`` surely carries; empty when the source does not say."""
    tree = _tree(path)
    if tree is None:
        return frozenset()
    return _walk(tree.body, {}, {}).get(name, frozenset())


@cache
def _sources(path: Path) -> tuple[str, ...]:
    """The text of ``path`` and of every test module it imports from, transitively."""
    seen: dict[Path, str] = {}
    waiting = [path]
    while waiting:
        current = waiting.pop()
        if current in seen:
            continue
        try:
            seen[current] = current.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            seen[current] = ""
        tree = _tree(current)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ImportFrom):
                found = [_test_module(node.module)]
                if node.module == "tests":
                    found += [_test_module(f"tests.{alias.name}") for alias in node.names]
            elif isinstance(node, ast.Import):
                found = [_test_module(alias.name) for alias in node.names]
            else:
                continue
            # conftest.py exports fixtures and helpers, no marks (its option
            # handling names "serial" without marking anything).
            waiting += [module for module in found if module is not None and module.name != "conftest.py"]
    return tuple(seen.values())


def may_carry(path: Path, mark: str) -> bool:
    """Whether any test in ``path`` could carry ``mark``: ``.mark`` or the
    quoted name appears in the module's source or in that of a test module it
    imports from (``pytest.mark.serial``, ``getattr(pytest.mark, "serial")``)."""
    used = re.compile(rf"\.{re.escape(mark)}\b|['\"]{re.escape(mark)}['\"]")
    return any(used.search(text) for text in _sources(path))


class _Marks:
    """A test's marks for `Expression.evaluate`, noting which names the
    expression asked about and whether any with arguments."""

    def __init__(self, marks: Iterable[str]) -> None:
        self.marks = frozenset(marks)
        self.asked: set[str] = set()
        self.with_arguments = False

    def __call__(self, name: str, /, **kwargs: object) -> bool:
        self.asked.add(name)
        self.with_arguments = self.with_arguments or bool(kwargs)
        return name in self.marks


def expression_false_for_every_test(expression: str, path: Path) -> bool:
    """Whether `-m expression` deselects every test of ``path``: false with
    the module's sure marks present, whatever other marks a test carries.

    Tries every combination of the other marks the expression asks about,
    adding any a combination newly asks about (``and``/``or`` skip names)
    until none is new."""
    compiled = Expression.compile(expression)
    present = sure_marks(path)
    unknown: list[str] = []
    while True:
        asked: set[str] = set()
        for values in itertools.product((False, True), repeat=len(unknown)):
            marks = _Marks(present | {name for name, on in zip(unknown, values, strict=True) if on})
            # Selected in some case, or `-m "name(arg=1)"`, which depends on
            # a mark's arguments: import it.
            if compiled.evaluate(marks) or marks.with_arguments:
                return False
            asked |= marks.asked
        new = sorted(asked - present - set(unknown))
        if not new:
            return True
        unknown += new
        if len(unknown) > 8:
            return False  # too many combinations to try: import it


def leaves_out(path: Path, *, expression: str, only_mark: str = "") -> bool:
    """Whether a run with `-m expression` (may be empty) that keeps only the
    tests marked ``only_mark`` (if given) would select nothing in ``path``."""
    if not path.name.startswith("test_") or path.suffix != ".py":
        return False
    if only_mark and not may_carry(path, only_mark):
        return True
    return bool(expression) and expression_false_for_every_test(expression, path)


def dropped_whole(path: Path, *, drop: frozenset[str], unless: str) -> bool:
    """Whether a pass that drops every test carrying a mark in ``drop``
    unless it carries ``unless`` (the PostgreSQL pass: ``slow`` ... unless
    ``postgres_slow``) would drop every test of ``path``."""
    return path.name.startswith("test_") and bool(sure_marks(path) & drop) and not may_carry(path, unless)
