"""Every library package is type-checked under mypy's strict flags.

The flags are listed per module in pyproject.toml (mypy names the modules after the folders), so a
package added to setup.py but not to that list would be checked leniently without anyone noticing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # the standard library's from Python 3.11

ROOT = Path(__file__).resolve().parents[1]


def _shipped_folders() -> set[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "FOLDERS" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("setup.py no longer defines FOLDERS")


def test_every_shipped_package_is_checked_strictly() -> None:
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    folders = _shipped_folders()
    assert set(mypy["files"]) == folders
    strict = [o for o in mypy["overrides"] if o.get("disallow_untyped_defs")]
    assert len(strict) == 1
    assert set(strict[0]["module"]) == folders | {f"{folder}.*" for folder in folders}
    assert strict[0]["disallow_any_generics"] and strict[0]["warn_return_any"]


def test_each_installed_name_mypy_follows_is_a_stub_of_its_folder() -> None:
    # typings/infersight/collector/store/__init__.pyi re-exports collector.store, and so on.
    stubs = sorted((ROOT / "typings" / "infersight").rglob("*.pyi"))
    assert len(stubs) > 1
    for stub in stubs:
        parts = stub.relative_to(ROOT / "typings" / "infersight").with_suffix("").parts
        folder_module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not folder_module:
            continue  # the namespace's own stub re-exports nothing
        assert f"from {folder_module} import *" in stub.read_text().splitlines(), stub
