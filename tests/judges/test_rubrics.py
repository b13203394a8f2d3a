"""Rubrics: the built-ins load and render; a text changed without a version bump is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from infersight.judges import RubricError, RubricVersionError, load_rubrics, lock_rubrics
from infersight.judges._rubrics import LOCK_FILE, builtin_folder, load_folder
from infersight.judges._types import Message, SampledSpan

BUILTINS = {"groundedness", "helpfulness", "instruction_following", "json_adherence", "refusal_appropriateness"}


def span(**kw) -> SampledSpan:
    defaults = dict(project="p", ts_ns=0, trace_id="t", span_id="s",
                    messages=(Message("system", "Answer in English."), Message("user", "Where is my invoice?")),
                    answer="On the billing page.")
    defaults.update(kw)
    return SampledSpan(**defaults)


def test_builtin_rubrics_match_their_lock_file():
    # Fails when someone edits a shipped template without bumping its version and locking it.
    rubrics = load_rubrics()
    assert set(rubrics) == BUILTINS
    lock = json.loads((builtin_folder() / LOCK_FILE).read_text())["rubrics"]
    for rubric in rubrics.values():
        assert lock[rubric.id][str(rubric.version)] == rubric.sha256


@pytest.mark.parametrize("rubric_id", sorted(BUILTINS))
def test_builtin_rubrics_render_the_span_and_ask_for_the_verdict_format(rubric_id):
    rubric = load_rubrics()[rubric_id]
    sample = span(messages=(*span().messages, Message("tool", "Invoices live under Billing > History.")),
                  answer='{"where": "billing"}' if rubric_id == "json_adherence" else "On the billing page.")
    assert rubric.applies_to(sample)
    (message,) = rubric.render(sample)
    assert message["role"] == "user"
    assert '{"score": <integer 1-5>' in message["content"]
    assert sample.answer in message["content"]


def test_rubrics_that_need_context_or_json_do_not_apply_without_it():
    rubrics = load_rubrics()
    plain = span()
    assert not rubrics["groundedness"].applies_to(plain)
    assert not rubrics["json_adherence"].applies_to(plain)
    assert rubrics["json_adherence"].applies_to(span(answer='```json\n{"a": 1}\n```'))
    assert rubrics["helpfulness"].applies_to(plain)


@pytest.fixture
def rubric_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "rubrics"
    shutil.copytree(builtin_folder(), folder)
    return folder


def test_editing_a_template_without_bumping_its_version_is_an_error(rubric_copy):
    load_folder(rubric_copy)  # untouched copy loads
    path = rubric_copy / "helpfulness.j2"
    path.write_text(path.read_text().replace("Score how helpful", "Score how very helpful"))

    with pytest.raises(RubricVersionError, match=r"helpfulness@v1 .*changed since version 1 was recorded.*bump"):
        load_folder(rubric_copy)
    with pytest.raises(RubricVersionError):
        lock_rubrics(rubric_copy)  # the lock never rewrites a recorded version


def test_a_bumped_version_must_be_locked_then_loads(rubric_copy):
    path = rubric_copy / "helpfulness.j2"
    path.write_text(path.read_text().replace("Score how helpful", "Score how very helpful")
                    .replace("version: 1", "version: 2"))

    with pytest.raises(RubricVersionError, match="is not recorded"):
        load_folder(rubric_copy)
    assert lock_rubrics(rubric_copy) == ["helpfulness@v2"]
    assert load_folder(rubric_copy)["helpfulness"].version == 2
    recorded = json.loads((rubric_copy / LOCK_FILE).read_text())["rubrics"]["helpfulness"]
    assert set(recorded) == {"1", "2"}  # history kept: v1's text can never come back changed


def test_line_endings_do_not_count_as_an_edit(rubric_copy):
    path = rubric_copy / "helpfulness.j2"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert load_folder(rubric_copy)["helpfulness"].version == 1


def test_custom_rubrics_from_a_folder(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "tone.j2").write_text(
        "---\nid: tone\nversion: 1\ndescription: Polite?\n---\nIs this polite? <answer>\n{{ answer }}\n</answer>\n"
        'Reply {"score": <integer 1-5>, "reason": "..."}\n'
    )
    with pytest.raises(RubricVersionError, match="infersight judge rubrics lock"):
        load_rubrics(folder)
    lock_rubrics(folder)
    rubrics = load_rubrics(folder)
    assert set(rubrics) == BUILTINS | {"tone"}
    assert "Thanks!" in rubrics["tone"].render(span(answer="Thanks!"))[0]["content"]

    (folder / "helpful.j2").write_text("---\nid: helpfulness\nversion: 9\n---\nx\n")
    lock_rubrics(folder)
    with pytest.raises(RubricError, match="reuses the id 'helpfulness'"):
        load_rubrics(folder)


@pytest.mark.parametrize("text, message", [
    ("no front matter\n", "must start with front matter"),
    ("---\nid: x\n---\nbody\n", "'version'"),
    ("---\nid: X Y\nversion: 1\n---\nbody\n", "'id'"),
    ("---\nid: x\nversion: 1\nrequires: vibes\n---\nbody\n", "'requires'"),
    ("---\nid: x\nversion: 1\ncolour: red\n---\nbody\n", "front matter lines"),
    ("---\nid: x\nversion: 1\n---\n{% for %}\n", "not a valid jinja2 template"),
])
def test_malformed_rubrics_are_refused(tmp_path, text, message):
    (tmp_path / "bad.j2").write_text(text)
    with pytest.raises(RubricError, match=message):
        lock_rubrics(tmp_path)


def test_a_misspelt_variable_fails_at_render_not_silently(tmp_path):
    (tmp_path / "typo.j2").write_text("---\nid: typo\nversion: 1\n---\n{{ anwser }}\n")
    lock_rubrics(tmp_path)
    rubric = load_folder(tmp_path)["typo"]
    with pytest.raises(RubricError, match="failed to render"):
        rubric.render(span())


def test_templates_run_sandboxed(tmp_path):
    (tmp_path / "evil.j2").write_text("---\nid: evil\nversion: 1\n---\n{{ answer.__class__.__mro__ }}\n")
    lock_rubrics(tmp_path)
    with pytest.raises(RubricError):
        load_folder(tmp_path)["evil"].render(span())
