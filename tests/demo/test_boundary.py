"""The demo's fakes stay outside the product: only the ``infersight demo`` command reaches them.

The product packages must not start depending on a fake model or judge (a test helper that
ships as a feature), and the demo must stay an SDK user like any application, so the collector's
command can import it without a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("sdk", "collector", "detectors", "judges", "dashboards")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
    return names


def test_only_the_demo_command_imports_the_demo():
    importers = sorted(
        str(path.relative_to(ROOT))
        for folder in PRODUCT
        for path in (ROOT / folder).rglob("*.py")
        if any(name == "infersight.demo" or name.startswith("infersight.demo.") for name in _imports(path))
    )
    assert importers == ["collector/_demo.py"]  # what the `demo` command runs


def test_no_fake_is_left_among_the_product_modules():
    fakes = sorted(str(p.relative_to(ROOT)) for folder in PRODUCT for p in (ROOT / folder).rglob("*fake*"))
    assert fakes == []


def test_the_demo_uses_the_sdk_and_nothing_else_of_ours():
    ours = {
        name.split(".")[1]
        for path in (ROOT / "demo").rglob("*.py")
        for name in _imports(path)
        if name.startswith("infersight.")
    }
    assert ours <= {"sdk"}
