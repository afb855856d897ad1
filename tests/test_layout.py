"""The layout the code base keeps: tests share helpers, not each other; packages import one way.

Imports are read with ``ast`` from every module, those inside functions included; imports under
``if TYPE_CHECKING:`` are left out, since they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# What each package must never import: proxy → ticketing → auth, and the embedded GitHub
# server stands apart from all three.
FORBIDDEN = {
    "auth": {"proxy", "ticketing"},
    "ticketing": {"proxy"},
    "embedded_github": {"proxy", "ticketing", "auth"},
}


@dataclass(frozen=True)
class Import:
    """One module an import statement loads, and every name it may load as a module."""

    line: int
    module: str
    # ``from a.b import c`` loads a.b, and a.b.c too when c is a module.
    names: tuple[str, ...]


def module_name(path: Path) -> str:
    """Return the dotted name of the module at ``path``, a file under the repository root."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(test: ast.expr) -> bool:
    """Tell whether an ``if`` test is ``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def read_imports(source: str, module: str, *, is_package: bool = False) -> Iterator[Import]:
    """Yield every import in ``source`` that can run, relative ones resolved against ``module``."""
    package = module if is_package else module.rpartition(".")[0]
    pending: list[ast.AST] = [ast.parse(source)]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (Import(node.lineno, a.name, (a.name,)) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            names = (base, *(f"{base}.{alias.name}" for alias in node.names))
            yield Import(node.lineno, base, names)
        pending.extend(ast.iter_child_nodes(node))


def imports_of(path: Path) -> list[Import]:
    """Return the imports of the module at ``path``, in line order."""
    found = read_imports(
        path.read_text(encoding="utf-8"), module_name(path), is_package=path.name == "__init__.py"
    )
    return sorted(found, key=lambda each: (each.line, each.module))


def test_no_module_under_tests_imports_a_test_module() -> None:
    """Tests, conftest files and helpers import shared code from tests/helpers/, never a test."""
    tests = {module_name(path) for path in TESTS.rglob("test_*.py")}
    found = [
        f"{path.relative_to(ROOT)}:{each.line} imports {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for each in imports_of(path)
        for name in each.names
        if name in tests
    ]
    assert found == [], "move what they share into tests/helpers/:\n" + "\n".join(found)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_run_one_way(package: str) -> None:
    """auth imports neither proxy nor ticketing, ticketing no proxy, embedded_github none."""
    found = [
        f"{path.relative_to(ROOT)}:{each.line} imports {each.module}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for each in imports_of(path)
        if each.module.split(".")[0] in FORBIDDEN[package]
    ]
    rule = f"{package} must not import {', '.join(sorted(FORBIDDEN[package]))}"
    assert found == [], rule + ":\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from tests.proxy.test_errors import raw", "tests.proxy.test_errors"),
        ("from tests.proxy import test_errors", "tests.proxy.test_errors"),
        ("import tests.proxy.test_errors as errors", "tests.proxy.test_errors"),
        ("from .test_errors import raw", "tests.proxy.test_errors"),
        ("from . import test_errors", "tests.proxy.test_errors"),
        ("from ..ticketing.test_render import chat", "tests.ticketing.test_render"),
        ("def later():\n    from proxy.app import create_app\n", "proxy.app"),
        ("if TYPE_CHECKING:\n    pass\nelse:\n    import proxy.app\n", "proxy.app"),
    ],
)
def test_import_reader_finds_every_kind_of_import(source: str, expected: str) -> None:
    """Absolute, relative, aliased, in-function and runtime-branch imports are all seen."""
    found = read_imports(source, "tests.proxy.test_new")
    assert expected in {name for each in found for name in each.names}


def test_import_reader_leaves_out_imports_only_for_type_checking() -> None:
    """An import under ``if TYPE_CHECKING:`` never runs, so it does not count."""
    source = "import typing\nif typing.TYPE_CHECKING:\n    from proxy.app import create_app\n"
    assert [each.module for each in read_imports(source, "ticketing.desk")] == ["typing"]
