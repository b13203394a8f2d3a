"""The decorators keep the decorated function's signature for type checkers.

An application that type-checks its code must see ``answer(question: str) -> str`` through
``@traced_llm``, not ``(...) -> Any``: mypy runs on a small typed program that imports the SDK
as installed (``infersight.sdk``) and both asserts the types it sees and makes calls it must refuse.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent("""
    from collections.abc import AsyncIterator, Iterator
    from typing import assert_type

    from infersight.sdk import traced_llm, traced_rerank, traced_retrieval

    @traced_llm
    def bare(question: str) -> str:
        return question

    @traced_llm(provider="openai", model="gpt-4o-mini")
    def answer(question: str, *, temperature: float = 0.0) -> str:
        return question

    @traced_llm(provider="openai")
    async def answer_async(question: str) -> str:
        return question

    @traced_llm(provider="openai")
    def chunks(question: str) -> Iterator[str]:
        yield question

    @traced_llm(provider="openai")
    async def chunks_async(question: str) -> AsyncIterator[str]:
        yield question

    @traced_retrieval(data_source="kb", top_k=4)
    def retrieve(query: str, top_k: int = 4) -> list[dict[str, object]]:
        return []

    @traced_retrieval
    def retrieve_bare(query: str) -> list[str]:
        return []

    @traced_rerank(model="bge")
    def rerank(query: str, documents: list[str]) -> list[str]:
        return documents

    @traced_rerank
    def rerank_bare(documents: list[str]) -> list[str]:
        return documents

    assert_type(bare("q"), str)
    assert_type(answer("q", temperature=0.2), str)

    async def use_async() -> None:
        assert_type(await answer_async("q"), str)

    assert_type(chunks("q"), Iterator[str])
    assert_type(chunks_async("q"), AsyncIterator[str])
    assert_type(retrieve("q", top_k=2), list[dict[str, object]])
    assert_type(retrieve_bare("q"), list[str])
    assert_type(rerank("q", ["a"]), list[str])
    assert_type(rerank_bare(["a"]), list[str])

    answer(1)  # REFUSED arg-type
    retrieve("q", top_k="2")  # REFUSED arg-type
    rerank("q")  # REFUSED call-arg
    rerank_bare(["a"], 3)  # REFUSED call-arg
""")


def test_decorated_functions_keep_their_signatures(tmp_path: Path) -> None:
    # The SDK as an application's checker finds it: infersight/sdk (a namespace package).
    (tmp_path / "infersight").mkdir()
    (tmp_path / "infersight" / "sdk").symlink_to(ROOT / "sdk", target_is_directory=True)
    program = tmp_path / "app.py"
    program.write_text(PROGRAM)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-version", "3.11", "--no-incremental",
         "--config-file", "/dev/null", "--follow-imports", "silent", "--ignore-missing-imports",
         str(program)],
        capture_output=True, text=True, cwd=tmp_path, env={"MYPYPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    lines = PROGRAM.splitlines()
    refused = {i + 1 for i, line in enumerate(lines) if "# REFUSED" in line}
    errors = re.findall(r"^app\.py:(\d+): error: .*\[([a-z-]+)\]$", result.stdout, re.MULTILINE)
    assert {int(line) for line, _ in errors} == refused, result.stdout
    for line, code in errors:
        assert lines[int(line) - 1].endswith(f"# REFUSED {code}"), result.stdout
