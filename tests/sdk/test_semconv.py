"""The span contract's names live once, each explained, and every reader's names are among them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from infersight.sdk import semconv

ROOT = Path(__file__).resolve().parents[2]
NAMES = {value for key, value in vars(semconv).items() if key.isupper() and isinstance(value, str)}
# How SQL reads an attribute, in the view's files and in the queries Python modules build.
_SQL_KEY = re.compile(r"\b(?:Span|Resource)Attributes\['([^']+)'\]")


def _constants_and_docstrings() -> list[tuple[str, bool]]:
    body = ast.parse(Path(semconv.__file__).read_text()).body
    found = []
    for node, following in zip(body, [*body[1:], None], strict=True):
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets):
            documented = (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                          and isinstance(following.value.value, str) and bool(following.value.value.strip()))
            found.append((node.targets[0].id, documented))
    return found


def test_every_name_has_a_docstring():
    constants = _constants_and_docstrings()
    assert len(constants) == len(NAMES) > 50
    assert [name for name, documented in constants if not documented] == []


def test_each_attribute_name_is_defined_once():
    values = [value for key, value in vars(semconv).items() if key.isupper()]
    assert len(values) == len(set(values))


def test_the_module_imports_nothing():
    # Readers that need only the names (a query, a test, a foreign tool) pay nothing for them.
    tree = ast.parse(Path(semconv.__file__).read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [ast.unparse(n) for n in imports] == ["from __future__ import annotations"]


def test_every_attribute_the_sql_reads_is_a_defined_name():
    sql = sorted((ROOT / "collector" / "store" / "sql").glob("*.sql"))
    python = [p for folder in ("collector", "detectors", "judges", "dashboards") for p in (ROOT / folder).rglob("*.py")]
    read = {(path.name, key) for path in [*sql, *python] for key in _SQL_KEY.findall(path.read_text())}
    # The control: the view reads dozens of names, so the pattern still finds them.
    assert len({key for name, key in read if name.endswith(".sql")}) > 30
    assert sorted(f"{name}: {key}" for name, key in read if key not in NAMES and key != "service.version") == []


def test_the_sdk_itself_spells_no_attribute_name():
    """The SDK writes its names through this module only (logger and scope names aside)."""
    pattern = re.compile(r"[\"'](?:gen_ai|infersight)\.[a-z0-9_.]+[\"']")
    allowed = {'"infersight.sdk"', '"infersight.tag."'}
    spelled = sorted(
        f"{path.name}: {literal}"
        for path in (ROOT / "sdk").glob("*.py") if path.name != "semconv.py"
        for literal in pattern.findall(path.read_text()) if literal not in allowed
    )
    assert spelled == []

