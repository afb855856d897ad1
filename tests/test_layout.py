"""The layout the code base keeps: tests share helpers, not each other; packages import one way.

Imports are read with ``ast`` from every module, those inside functions included; imports under
``if TYPE_CHECKING:`` are left out, since they never run.
"""

from __future__ import annotations

import ast
import re
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


# --- the packages' own layout ----------------------------------------------------------------

PACKAGES = ("proxy", "ticketing", "auth", "embedded_github")
MODULE_LIMIT = 400  # lines
CLASS_LIMIT = 300  # lines
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def package_modules() -> list[Path]:
    """Return every module of the four packages, in path order."""
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def run_time_imports(path: Path) -> set[str]:
    """Return the first-party modules ``path`` imports when it is itself imported.

    Imports inside functions run later and under ``TYPE_CHECKING`` never, so neither can
    close a cycle at import time; ``from package import module`` names the module.
    """
    known = {module_name(each) for each in package_modules()}
    source = path.read_text(encoding="utf-8")
    module = module_name(path)
    found: set[str] = set()
    pending: list[ast.AST] = list(ast.parse(source).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If) and is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            lines = ast.get_source_segment(source, node) or ""
            for each in read_imports(lines, module, is_package=path.name == "__init__.py"):
                found.update(n for n in each.names[1:] if n in known)
                if not any(n in known for n in each.names[1:]) and each.module in known:
                    found.add(each.module)
            continue
        pending.extend(ast.iter_child_nodes(node))
    found.discard(module)
    return found


def test_no_module_is_over_400_lines_and_no_class_over_300() -> None:
    """Small modules, small classes: a module that grows past the limit is split by seam."""
    found = []
    for path in package_modules():
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        if lines > MODULE_LIMIT:
            found.append(f"{path.relative_to(ROOT)}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                size = node.end_lineno - node.lineno + 1
                if size > CLASS_LIMIT:
                    found.append(f"{path.relative_to(ROOT)}: class {node.name} {size} lines")
    assert found == [], "over the limit:\n" + "\n".join(found)


def test_modules_import_each_other_without_cycles() -> None:
    """No chain of run-time imports between the packages' modules leads back to its start."""
    graph = {module_name(path): run_time_imports(path) for path in package_modules()}
    cycles: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append(" → ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == [], "import cycles:\n" + "\n".join(cycles)


def test_the_cycle_finder_sees_a_module_importing_its_package_that_imports_it() -> None:
    """``from . import x`` names the module x, and a plain import names what it imports."""
    path = ROOT / "ticketing" / "desk" / "comments.py"
    assert "ticketing.desk.decisions" in run_time_imports(path)
    assert "ticketing.desk" not in run_time_imports(path)
    facade = run_time_imports(ROOT / "ticketing" / "desk" / "__init__.py")
    assert "ticketing.desk.facade" in facade


def test_only_the_github_package_imports_pygithub() -> None:
    """PyGithub is reached through ticketing/github/ alone, so one worker thread owns it."""
    found = [
        f"{path.relative_to(ROOT)}:{each.line}"
        for path in package_modules()
        if path.parent != ROOT / "ticketing" / "github"
        for each in imports_of(path)
        if each.module == "github" or each.module.startswith("github.")
    ]
    assert found == [], "PyGithub imported outside ticketing/github/:\n" + "\n".join(found)


def test_the_architecture_doc_lists_every_module_and_no_other() -> None:
    """docs/architecture.md has one line per module; a new or removed module updates it."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z0-9_/]+\.py)` \|", text, flags=re.MULTILINE))
    actual = {str(path.relative_to(ROOT)) for path in package_modules()}
    assert sorted(actual - listed) == [], "modules missing from docs/architecture.md"
    assert sorted(listed - actual) == [], "docs/architecture.md lists modules that do not exist"


def test_the_image_copies_every_package_and_owns_its_data_directory() -> None:
    """The Dockerfile installs all four packages, and /data is writable by its user."""
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    copied = set(re.findall(r"^COPY (\w+) \./\1$", dockerfile, flags=re.MULTILINE))
    assert copied >= set(PACKAGES), f"not copied into the image: {set(PACKAGES) - copied}"
    assert "chown ticketproxy:ticketproxy /data" in dockerfile
    assert dockerfile.index("chown ticketproxy:ticketproxy /data") < dockerfile.index(
        "USER ticketproxy"
    )
