"""Rubrics: jinja2 templates with an id and a version, held to their text by a lock file.

A rubric file (``*.j2``) starts with front matter, then the prompt template::

    ---
    id: helpfulness
    version: 1
    description: Does the answer address the user's request usefully?
    requires: context          # optional: context, json (comma-separated)
    ---
    ...template rendered with messages, question, system, context, answer...

Judge scores are only comparable within one rubric version, so the text must not change under
a version. Each folder of rubrics has a ``rubrics.lock.json`` that records the SHA-256 of every
(id, version) ever released; the loader refuses a rubric whose text no longer matches its
recorded hash (edit without a bump) or that is not recorded at all (new version not locked yet).
``lock_rubrics`` records new versions and refuses to rewrite a recorded one. The built-in
rubrics' lock ships next to them in ``infersight/judges/rubrics/``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from ._errors import RubricError, RubricVersionError
from ._types import SampledSpan

LOCK_FILE = "rubrics.lock.json"
SUFFIX = ".j2"
REQUIREMENTS = frozenset({"context", "json"})

_ID = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_KEYS = frozenset({"id", "version", "description", "requires"})

# Custom rubrics come from users' folders: the sandbox keeps a template from reaching Python
# internals, and StrictUndefined turns a misspelt variable into an error instead of a blank.
_ENV = SandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


@dataclass(frozen=True)
class Rubric:
    """One rubric version.

    Attributes:
        id, version: what scores record; scores are comparable only within both.
        description: one line for listings.
        requires: what a span must have for the rubric to apply (``context``, ``json``).
        sha256: hash of the file's text (line endings normalised), as the lock records it.
        path: the file it was loaded from.
    """

    id: str
    version: int
    description: str
    requires: frozenset[str]
    sha256: str
    path: Path
    body: str

    @property
    def key(self) -> str:
        return f"{self.id}@v{self.version}"

    def applies_to(self, span: SampledSpan) -> bool:
        """Whether ``span`` has what the rubric needs (retrieved context, an expected JSON answer)."""
        if "context" in self.requires and not span.context:
            return False
        return "json" not in self.requires or _expects_json(span)

    def render(self, span: SampledSpan) -> list[dict[str, str]]:
        """The chat messages to send the judge for ``span``.

        Raises :class:`RubricError` when the template fails on this input.
        """
        conversation = [{"role": m.role, "content": m.content} for m in span.messages if m.role != "system"]
        users = [m.content for m in span.messages if m.role == "user"]
        variables = {
            "messages": conversation,
            "question": users[-1] if users else "",
            "system": "\n".join(m.content for m in span.messages if m.role == "system"),
            "context": list(span.context),
            "answer": span.answer,
        }
        try:
            text = _compile(self.body).render(**variables)
        except jinja2.TemplateError as exc:
            raise RubricError(f"rubric {self.key} ({self.path}) failed to render: {exc}") from exc
        return [{"role": "user", "content": text.strip()}]


@functools.lru_cache(maxsize=64)
def _compile(body: str) -> jinja2.Template:
    return _ENV.from_string(body)


def _expects_json(span: SampledSpan) -> bool:
    if span.expects_json:
        return True
    # Spans from instrumentations that do not record gen_ai.output.type: the app asked for JSON
    # if its prompt says so or the answer is shaped like JSON.
    answer = span.answer.strip().removeprefix("```json").lstrip("`").strip()
    if answer[:1] in ("{", "["):
        return True
    return any("json" in m.content.lower() for m in span.messages if m.role in ("system", "user"))


def builtin_folder() -> Path:
    """Where the built-in rubrics and their lock file are installed."""
    return Path(str(resources.files("infersight.judges") / "rubrics"))


def file_sha256(text: str) -> str:
    """The hash a lock records: SHA-256 of the text with ``\\r\\n`` normalised to ``\\n``.

    Line endings are normalised so a Windows checkout of the same text does not look edited.
    """
    return hashlib.sha256(text.replace("\r\n", "\n").encode("utf-8")).hexdigest()


def parse_rubric(path: Path) -> Rubric:
    """Read one rubric file, without checking it against a lock."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricError(f"cannot read rubric {path}: {exc}") from exc
    normalised = text.replace("\r\n", "\n")
    match = _FRONT.match(normalised)
    if match is None:
        raise RubricError(f"rubric {path} must start with front matter between '---' lines (id, version)")
    meta = _front_matter(match.group(1), path)
    body = normalised[match.end():]
    rubric_id = meta.get("id", "")
    if not _ID.match(rubric_id):
        raise RubricError(
            f"the 'id' of rubric {path} must be lowercase letters, digits, '_', '.', '-'; got {rubric_id!r}"
        )
    version_text = meta.get("version", "")
    if not version_text.isdigit() or int(version_text) < 1:
        raise RubricError(f"the 'version' of rubric {path} must be a positive integer; got {version_text!r}")
    requires = frozenset(r.strip() for r in meta.get("requires", "").split(",") if r.strip())
    if not requires <= REQUIREMENTS:
        raise RubricError(
            f"the 'requires' of rubric {path} may name {sorted(REQUIREMENTS)}; got {sorted(requires - REQUIREMENTS)}"
        )
    try:
        _ENV.parse(body)
    except jinja2.TemplateSyntaxError as exc:
        raise RubricError(f"rubric {path} is not a valid jinja2 template: {exc}") from exc
    return Rubric(
        id=rubric_id, version=int(version_text), description=meta.get("description", ""),
        requires=requires, sha256=file_sha256(text), path=path, body=body,
    )


def _front_matter(block: str, path: Path) -> dict[str, str]:
    meta: dict[str, str] = {}
    for line in block.splitlines():
        stripped = line.split(" #", 1)[0].strip()
        if not stripped:
            continue
        key, sep, value = stripped.partition(":")
        key = key.strip()
        if not sep or key not in _KEYS:
            raise RubricError(
                f"rubric {path}: front matter lines are 'key: value' with keys {sorted(_KEYS)}; got {line!r}"
            )
        if key in meta:
            raise RubricError(f"rubric {path}: front matter key {key!r} appears twice")
        meta[key] = value.strip()
    return meta


def read_lock(folder: Path) -> dict[str, dict[str, str]]:
    """The lock of ``folder``: ``{rubric id: {version: sha256}}``; empty when there is none."""
    path = folder / LOCK_FILE
    if not path.exists():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        rubrics = document["rubrics"]
        return {str(i): {str(v): str(h) for v, h in versions.items()} for i, versions in rubrics.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RubricError(f"the rubric lock {path} is unreadable: {exc}") from exc


def _rubric_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise RubricError(f"the rubric folder {folder} does not exist")
    return sorted(p for p in folder.iterdir() if p.name.endswith(SUFFIX) and p.is_file())


def check_against_lock(rubric: Rubric, lock: Mapping[str, Mapping[str, str]]) -> None:
    """Raise :class:`RubricVersionError` unless the lock records exactly this text for this version."""
    recorded = lock.get(rubric.id, {}).get(str(rubric.version))
    where = rubric.path.parent
    if recorded is None:
        raise RubricVersionError(
            f"rubric {rubric.key} ({rubric.path.name}) is not recorded in {where / LOCK_FILE}; "
            f"record a new version with 'infersight judge rubrics lock {where}'"
        )
    if recorded != rubric.sha256:
        raise RubricVersionError(
            f"rubric {rubric.key} ({rubric.path.name}) changed since version {rubric.version} was recorded "
            f"(sha256 {recorded[:12]} -> {rubric.sha256[:12]}): scores of one version must come from one "
            f"text, so bump 'version' and run 'infersight judge rubrics lock {where}'"
        )


def load_folder(folder: str | Path) -> dict[str, Rubric]:
    """The rubrics in ``folder``, each checked against the folder's lock file."""
    folder = Path(folder)
    lock = read_lock(folder)
    out: dict[str, Rubric] = {}
    for path in _rubric_files(folder):
        rubric = parse_rubric(path)
        if rubric.id in out:
            raise RubricError(
                f"rubric id {rubric.id!r} is defined twice in {folder} ({out[rubric.id].path.name}, {path.name})"
            )
        check_against_lock(rubric, lock)
        out[rubric.id] = rubric
    return out


def load_rubrics(custom_folder: str | Path | None = None, *, builtin: bool = True) -> dict[str, Rubric]:
    """The built-in rubrics plus those in ``custom_folder``, by id, each checked against its lock.

    Raises :class:`RubricVersionError` for a text that changed without a version bump (or a
    version not recorded yet) and :class:`RubricError` for anything else malformed, including a
    custom rubric that reuses a built-in id.
    """
    out = load_folder(builtin_folder()) if builtin else {}
    if custom_folder is not None:
        for rubric_id, rubric in load_folder(custom_folder).items():
            if rubric_id in out:
                raise RubricError(f"custom rubric {rubric.path} reuses the id {rubric_id!r} of a built-in rubric")
            out[rubric_id] = rubric
    return out


def select_rubrics(available: Mapping[str, Rubric], ids: Iterable[str]) -> list[Rubric]:
    """The rubrics named by ``ids``, in that order; :class:`RubricError` names the unknown ones."""
    ids = list(ids)
    unknown = [i for i in ids if i not in available]
    if unknown:
        raise RubricError(f"unknown rubric(s) {unknown}; available: {sorted(available)}")
    return [available[i] for i in ids]


def lock_rubrics(folder: str | Path) -> list[str]:
    """Record every rubric version in ``folder`` that its lock file lacks; returns their keys.

    Never rewrites a recorded version: a changed text under a recorded version raises
    :class:`RubricVersionError` (bump the version instead).
    """
    folder = Path(folder)
    lock: dict[str, Any] = {k: dict(v) for k, v in read_lock(folder).items()}
    added: list[str] = []
    seen: set[str] = set()
    for path in _rubric_files(folder):
        rubric = parse_rubric(path)
        if rubric.id in seen:
            raise RubricError(f"rubric id {rubric.id!r} is defined twice in {folder}")
        seen.add(rubric.id)
        recorded = lock.get(rubric.id, {}).get(str(rubric.version))
        if recorded is None:
            lock.setdefault(rubric.id, {})[str(rubric.version)] = rubric.sha256
            added.append(rubric.key)
        else:
            check_against_lock(rubric, lock)
    if added:
        document = {
            "comment": "SHA-256 of every released rubric version. Written by 'infersight judge rubrics lock'; "
                       "never edit a recorded hash: bump the rubric's version instead.",
            "rubrics": {i: dict(sorted(v.items(), key=lambda kv: int(kv[0]))) for i, v in sorted(lock.items())},
        }
        (folder / LOCK_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return added
