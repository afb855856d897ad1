"""The package configuration: every data file ships, inside a package setuptools knows."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, find_packages

ROOT = Path(__file__).resolve().parent.parent


def _setuptools_config() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return dict(tomllib.load(file)["tool"]["setuptools"])


def test_each_package_data_directory_is_a_discovered_package() -> None:
    """proxy.static and the others are in `packages`, so setuptools warns of no absent one."""
    config = _setuptools_config()
    find = dict(config["packages"]["find"])  # type: ignore[index]
    discover = find_namespace_packages if find.get("namespaces", True) else find_packages
    packages = set(discover(where=str(ROOT), include=find["include"]))
    data = dict(config["package-data"])  # type: ignore[arg-type]
    assert "proxy.static" in data
    for package, patterns in data.items():
        assert package in packages, f"{package} holds data but is not a package"
        folder = ROOT / package.replace(".", "/")
        for pattern in patterns:
            assert list(folder.glob(pattern)), f"{package}: {pattern} matches no file"


def test_answer_page_files_are_package_data() -> None:
    """The answer page's HTML and script are both named, so a wheel cannot leave one out."""
    data = dict(_setuptools_config()["package-data"])  # type: ignore[arg-type]
    static = {p.name for p in (ROOT / "proxy" / "static").iterdir() if p.is_file()}
    covered = {
        name for name in static for pattern in data["proxy.static"] if Path(name).match(pattern)
    }
    assert covered == static
