"""``infersight judge ...``: sampled judging, panels, comparisons and the rollout gate.

The group is registered on the main ``infersight`` CLI. Commands open the embedded store in
``--data-dir``; while a collector owns that directory they ask the collector instead (the URL it
recorded in ``owner.lock``, the project's key from ``--key`` or ``INFERSIGHT_API_KEY``), with the
same output (:mod:`._operations` runs the same code on either side). A caller may put a store in
``ctx.obj["store"]`` or a collector client in ``ctx.obj["collector"]`` (tests, or a process that
already holds one). Exit codes: 0 success (gate: pass), 1 gate failed or an error, 2 usage error, 3 the
comparison could not be made (too few paired outputs, judge unavailable).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

CANNOT_EVALUATE = 3


class CannotEvaluate(click.ClickException):
    """The gate could not reach a verdict; distinct from a failed gate (1) in CI scripts."""

    exit_code = CANNOT_EVALUATE


if TYPE_CHECKING:
    _CapBase = click.ParamType[float | None]
else:  # generic from click 8.4 on; older ones (the floor is 8.1) cannot be subscripted at run time
    _CapBase = click.ParamType


class _Cap(_CapBase):
    """A daily cap: a number >= 0, or ``none`` for no cap of that kind."""

    def __init__(self, kind: type[int] | type[float]) -> None:
        self.kind = kind
        self.name = f"{kind.__name__}|none"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | None:
        if value is None or isinstance(value, self.kind):
            return value
        if str(value).strip().lower() == "none":
            return None
        try:
            cap = self.kind(value)
        except ValueError:
            self.fail(f"{value!r} is not a number or 'none'", param, ctx)
        if not cap >= 0:
            self.fail(f"{value!r} must be >= 0 or 'none'", param, ctx)
        return cap


def _since_ns(value: str, param: str = "--since") -> int:
    from infersight.collector.errors import BadRequest
    from infersight.collector.store import since_to_unix_ns

    try:
        return since_to_unix_ns(value, name=param.lstrip("-"))
    except BadRequest as exc:
        raise click.BadParameter(str(exc), param_hint=param) from exc


@contextlib.contextmanager
def _source(data_dir: Path, key: str | None) -> Iterator[Any]:
    """The store in ``data_dir``, or a client of the collector that owns it."""
    ctx = click.get_current_context()
    obj = ctx.obj if isinstance(ctx.obj, dict) else {}
    given = obj.get("store") or obj.get("collector")
    if given is not None:
        yield given
        return
    from infersight.collector.errors import InfersightError
    from infersight.collector.web import store_or_collector

    with contextlib.ExitStack() as stack:
        try:
            source = stack.enter_context(store_or_collector(data_dir, key))
        except InfersightError as exc:
            raise click.ClickException(str(exc)) from exc
        yield source


def _remote(source: Any) -> bool:
    from infersight.collector.web import CollectorClient

    return isinstance(source, CollectorClient)


def _ask(client: Any, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The collector's answer to one operation; its refusals as this CLI's errors and exit codes."""
    from infersight.collector.web import CollectorAnswer, CollectorUnreachable

    try:
        response = client.get(path, body) if method == "GET" else client.post(path, body)
    except CollectorUnreachable as exc:
        raise click.ClickException(str(exc)) from exc
    except CollectorAnswer as exc:
        detail = exc.body.get("detail")
        if isinstance(detail, dict) and detail.get("cannot_evaluate"):
            raise CannotEvaluate(str(detail.get("message"))) from exc
        raise click.ClickException(detail if isinstance(detail, str) else str(exc)) from exc
    answer: dict[str, Any] = response.json()
    return answer


def _project(source: Any, project: str | None) -> str:
    """The project to work on: ``--project`` (default ``default``), or through a collector the
    key's project, which ``--project`` (when given) must name."""
    if not _remote(source):
        return project or "default"
    served = str(_ask(source, "GET", "/api/v1/judge/spend", {"since_ns": time.time_ns()})["project"])
    if project is not None and project != served:
        raise click.ClickException(
            f"the collector at {source.url} owns the data directory and serves project {served!r} to this key, "
            f"not {project!r}: pass that project's key with --key")
    return served


def _store_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--key", default=None, envvar="INFERSIGHT_API_KEY",
                        help="The project's API key (env INFERSIGHT_API_KEY), for when a collector with API keys "
                             "owns --data-dir: the command then runs in that collector.")(func)
    func = click.option("--project", default=None,
                        help="Project whose spans are used [default: 'default'; through a running collector, "
                             "the key's project].")(func)
    func = click.option("--data-dir", default=".infersight", show_default=True,
                        type=click.Path(path_type=Path, exists=True, file_okay=False),
                        help="The collector's data directory: its store, or the collector that owns it.")(func)
    return func


def _judge_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--base-url", envvar="INFERSIGHT_JUDGE_BASE_URL", default="https://api.openai.com/v1",
                     show_default=True, help="OpenAI-compatible API base (env INFERSIGHT_JUDGE_BASE_URL)."),
        click.option("--model", envvar="INFERSIGHT_JUDGE_MODEL", default="gpt-4o-mini", show_default=True,
                     help="Judge model (env INFERSIGHT_JUDGE_MODEL)."),
        click.option("--api-key", envvar="INFERSIGHT_JUDGE_API_KEY", default=None,
                     help="Judge API key (env INFERSIGHT_JUDGE_API_KEY)."),
        click.option("--provider", default="openai", show_default=True,
                     help="Provider name for the judge's spans and price lookup."),
        click.option("--price-input-mtok", type=float, default=None,
                     help="Judge price, USD per million input tokens (for models genai-prices lacks)."),
        click.option("--price-output-mtok", type=float, default=None,
                     help="Judge price, USD per million output tokens."),
        click.option("--timeout", "timeout_s", type=float, default=30.0, show_default=True,
                     help="Seconds per judge request."),
        click.option("--max-retries", type=int, default=3, show_default=True,
                     help="Retries of transient failures (timeouts, 429, 5xx)."),
        click.option("--json-mode/--no-json-mode", default=True, show_default=True,
                     help="Send response_format=json_object (turn off for servers that reject it)."),
        click.option("--rubrics-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
                     help="Folder of custom rubrics (*.j2 with rubrics.lock.json)."),
        click.option("--concurrency", type=click.IntRange(1, 64), default=4, show_default=True,
                     help="Judge calls in flight at most."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _judge_of(opts: dict[str, Any]) -> Any:
    """The judge options, checked (a client is built locally, no request made), and the client."""
    from ._operations import JudgeOptions

    options = JudgeOptions.from_dict(opts)
    try:
        return options, options.judge()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


def _rubrics(options: Any, ids: tuple[str, ...]) -> list[Any]:
    from ._errors import RubricError

    try:
        rubrics: list[Any] = options.rubrics(ids)
    except RubricError as exc:
        raise click.ClickException(str(exc)) from exc
    return rubrics


def background_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--judge-*`` options of ``infersight collector``; read them with :func:`judge_settings`."""
    options = [
        click.option("--judge-base-url", envvar="INFERSIGHT_JUDGE_BASE_URL", default=None,
                     help="Judge a sample of spans in this process with this OpenAI-compatible API "
                          "(env INFERSIGHT_JUDGE_BASE_URL). Off without it."),
        click.option("--judge-model", envvar="INFERSIGHT_JUDGE_MODEL", default="gpt-4o-mini", show_default=True,
                     help="The judge model, as its endpoint names it."),
        click.option("--judge-provider", default="openai", show_default=True,
                     help="Who serves the judge model, for its price in genai-prices (e.g. anthropic, google)."),
        click.option("--judge-api-key", envvar="INFERSIGHT_JUDGE_API_KEY", default=None,
                     help="Judge API key (env INFERSIGHT_JUDGE_API_KEY)."),
        click.option("--judge-rubric", multiple=True, default=("helpfulness",), show_default=True,
                     help="Rubric applied to sampled spans (repeatable)."),
        click.option("--judge-rubrics-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
                     help="A folder of rubric files beside the built-in ones."),
        click.option("--judge-rate", type=click.FloatRange(0, 1), default=0.02, show_default=True,
                     help="Share of spans judged (small tenants and routes get more; see 'judge run')."),
        click.option("--judge-negative-feedback-rate", type=click.FloatRange(0, 1), default=1.0, show_default=True,
                     help="Share of spans judged whose trace a user gave a thumbs down; 0: feedback does not "
                          "steer the sample."),
        click.option("--judge-max-calls", type=_Cap(int), default=2000, show_default=True,
                     help="Daily judge calls per project, paced over the UTC day (one hour's share at 00:00, "
                          "the rest evenly until midnight), so every hour gets judgements."),
        click.option("--judge-max-usd", type=_Cap(float), default=5.0, show_default=True,
                     help="Daily judge dollars per project, paced like --judge-max-calls; 'none' for no "
                          "dollar cap. A judge model genai-prices lacks needs --judge-price-input-mtok and "
                          "--judge-price-output-mtok with a cap, or the collector refuses to start."),
        click.option("--judge-price-input-mtok", type=float, default=None,
                     help="Judge price, USD per million input tokens (for models genai-prices lacks)."),
        click.option("--judge-price-output-mtok", type=float, default=None,
                     help="Judge price, USD per million output tokens."),
        click.option("--judge-interval", type=click.FloatRange(1), default=60.0, show_default=True,
                     help="Seconds between judge cycles."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def judge_settings(options: dict[str, Any]) -> Any:
    """Pop the ``judge_*`` values :func:`background_options` added; ``JudgeSettings`` or ``None``.

    Raises ``ValueError`` (the collector's CLI turns it into a usage error) on a bad value.
    """
    from ._background import JudgeSettings

    values = {k: options.pop(k) for k in list(options) if k.startswith("judge_")}
    if not values.get("judge_base_url"):
        return None
    return JudgeSettings(
        base_url=values["judge_base_url"], model=values["judge_model"], api_key=values["judge_api_key"],
        provider=values["judge_provider"], rubrics=tuple(values["judge_rubric"]),
        rubrics_dir=values["judge_rubrics_dir"], rate=values["judge_rate"],
        negative_feedback_rate=values["judge_negative_feedback_rate"],
        max_calls_per_day=values["judge_max_calls"], max_usd_per_day=values["judge_max_usd"],
        price_input_mtok=values["judge_price_input_mtok"], price_output_mtok=values["judge_price_output_mtok"],
        every_s=values["judge_interval"],
    )


@click.group("judge")
def judge() -> None:
    """Score a sample of LLM answers with an LLM judge; compare app versions on fixed panels."""


@judge.command("run")
@click.option("--since", default="1h", show_default=True, help="Judge spans since (15m, 24h, 7d or ISO time).")
@click.option("--until", default=None, help="Judge spans before this (ISO time or look-back); default now.")
@click.option("--rubric", "rubric_ids", multiple=True, default=("helpfulness",), show_default=True,
              help="Rubric to apply (repeatable).")
@click.option("--rate", type=click.FloatRange(0, 1), default=0.02, show_default=True, help="Base sampling rate.")
@click.option("--min-per-stratum", type=click.IntRange(0), default=3, show_default=True,
              help="Expected judged spans per tenant and route at least.")
@click.option("--flagged-rate", type=click.FloatRange(0, 1), default=0.25, show_default=True,
              help="Sampling rate of spans a detector flagged.")
@click.option("--negative-feedback-rate", type=click.FloatRange(0, 1), default=1.0, show_default=True,
              help="Sampling rate of spans whose trace a user gave a thumbs down (sdk.feedback, "
                   "POST /api/v1/feedback); they are judged first. 0: feedback does not steer the sample.")
@click.option("--max-calls", type=_Cap(int), default=2000, show_default=True,
              help="Daily budget in judge calls (shared with the collector's background judge); 'none': no cap.")
@click.option("--max-usd", type=_Cap(float), default=5.0, show_default=True,
              help="Daily budget in dollars; 'none': no dollar cap. With a cap, a judge model genai-prices lacks "
                   "needs --price-input-mtok and --price-output-mtok, or the run is refused.")
@click.option("--pace/--no-pace", default=True, show_default=True,
              help="Spread the daily budget over the UTC day (one hour's share at 00:00, the rest evenly); "
                   "--no-pace lets a backfill spend what is left of today's budget now.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show a progress bar on stderr.")
@_judge_options
@_store_options
def run_command(since: str, until: str | None, rubric_ids: tuple[str, ...], rate: float, min_per_stratum: int,
                flagged_rate: float, negative_feedback_rate: float, max_calls: int | None, max_usd: float | None,
                pace: bool, progress: bool, data_dir: Path, project: str | None, key: str | None,
                **opts: Any) -> None:
    """Sample spans since --since and judge them (a backfill with --since 7d).

    While a collector owns --data-dir the run happens in that collector, which calls the judge.
    """
    from dataclasses import asdict

    from ._operations import RunRequest, check_price, run_judging, run_outcome

    request = RunRequest(
        since_ns=_since_ns(since), until_ns=_since_ns(until, "--until") if until else time.time_ns(),
        rubric_ids=rubric_ids, rate=rate, min_per_stratum=min_per_stratum, flagged_rate=flagged_rate,
        negative_feedback_rate=negative_feedback_rate, max_calls=max_calls, max_usd=max_usd, pace=pace)
    options, judge_client = _judge_of(opts)
    _rubrics(options, rubric_ids)
    with contextlib.closing(judge_client):
        try:
            check_price(judge_client, max_usd)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
    with _source(data_dir, key) as source:
        scope = _project(source, project)
        if _remote(source):
            outcome = _ask(source, "POST", "/api/v1/judge/run",
                           {**asdict(request), "judge": asdict(options)})
        else:
            outcome = run_outcome(run_judging(source, scope, options, request, progress=progress))
    click.echo(outcome["summary"])
    stopped = outcome["stopped"]
    if stopped == "budget" and pace and "paced" in outcome["budget_refusal"]:
        click.echo("The daily budget is paced over the UTC day; --no-pace spends what is left of today's now.",
                   err=True)
    if stopped and stopped != "budget":
        raise CannotEvaluate(f"judging stopped early: {stopped}")


@judge.group("panel")
def panel() -> None:
    """Frozen sets of inputs of one route, for comparing app versions."""


@panel.command("create")
@click.option("--route", required=True, help="The route whose inputs the panel freezes.")
@click.option("--size", type=click.IntRange(1), default=200, show_default=True, help="Distinct inputs to keep.")
@click.option("--since", default="30d", show_default=True, help="Take inputs seen since then.")
@click.option("--id", "panel_id", default=None, help="Panel id (default: route-date-hash).")
@_store_options
def panel_create(route: str, size: int, since: str, panel_id: str | None, data_dir: Path, project: str | None,
                 key: str | None) -> None:
    """Freeze up to --size distinct inputs of --route into a new panel; prints its id."""
    from ._errors import PanelError
    from ._panels import create_panel

    since_ns = _since_ns(since)
    request = {"route": route, "size": size, "since_ns": since_ns, "panel_id": panel_id}
    with _source(data_dir, key) as source:
        scope = _project(source, project)
        if _remote(source):
            created = _ask(source, "POST", "/api/v1/judge/panels", request)
        else:
            try:
                frozen = create_panel(source, scope, route, size, since_ns=since_ns, panel_id=panel_id)
            except (PanelError, ValueError) as exc:
                raise click.ClickException(str(exc)) from exc
            created = {"panel_id": frozen.panel_id, "items": len(frozen.items)}
    click.echo(created["panel_id"])
    note = f" (only {created['items']} distinct inputs were available)" if created["items"] < size else ""
    click.echo(f"Panel {created['panel_id']}: {created['items']} inputs of route {route!r}{note}.", err=True)


@panel.command("list")
@_store_options
def panel_list(data_dir: Path, project: str | None, key: str | None) -> None:
    """List the project's panels, newest first."""
    from ._panels import list_panels

    with _source(data_dir, key) as source:
        scope = _project(source, project)
        rows = _ask(source, "GET", "/api/v1/judge/panels", {})["rows"] if _remote(source) else list_panels(
            source, scope)
    if not rows:
        click.echo("No panels yet; create one with 'infersight judge panel create --route R'.", err=True)
        return
    click.echo(f"{'PANEL':<48}{'ROUTE':<28}{'CREATED (UTC)':<26}SIZE")
    for row in rows:
        click.echo(f"{row['panel_id']:<48}{row['route']:<28}{str(row['created'])[:19]:<26}{row['size']}")


def _compare_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--panel", "panel_id", required=True, help="Panel id (see 'judge panel list')."),
        click.option("--baseline", required=True, help="Baseline app version (service.version)."),
        click.option("--candidate", required=True, help="Candidate app version (service.version)."),
        click.option("--rubric", "rubric_id", default="helpfulness", show_default=True,
                     help="The rubric both versions are scored with."),
        click.option("--since", default="90d", show_default=True, help="Look for the versions' outputs since then."),
        click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
                     help="Confidence level of the difference's interval."),
        click.option("--resamples", type=click.IntRange(100), default=10_000, show_default=True,
                     help="Bootstrap resamples behind the interval."),
        click.option("--min-pairs", type=click.IntRange(1), default=10, show_default=True,
                     help="Fewest inputs with both versions scored for a result."),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _run_compare(panel_id: str, baseline: str, candidate: str, rubric_id: str, since: str, confidence: float,
                 resamples: int, min_pairs: int, data_dir: Path, project: str | None, key: str | None,
                 opts: dict[str, Any], gate_rule: dict[str, Any] | None = None) -> dict[str, Any]:
    """The comparison (and the gate's verdict, with ``gate_rule``) as :func:`compare_outcome` shapes it."""
    from dataclasses import asdict

    from ._errors import JudgeError
    from ._operations import CompareRequest, compare_outcome, compare_versions

    if baseline == candidate:
        raise click.UsageError("--baseline and --candidate must name different versions")
    request = CompareRequest(panel_id=panel_id, baseline=baseline, candidate=candidate, rubric_id=rubric_id,
                             since_ns=_since_ns(since), confidence=confidence, resamples=resamples,
                             min_pairs=min_pairs)
    options, judge_client = _judge_of(opts)
    judge_client.close()
    _rubrics(options, (rubric_id,))
    with _source(data_dir, key) as source:
        scope = _project(source, project)
        if _remote(source):
            return _ask(source, "POST", "/api/v1/judge/compare",
                        {**asdict(request), "judge": asdict(options), "gate": gate_rule})
        try:
            return compare_outcome(compare_versions(source, scope, options, request), gate_rule)
        except JudgeError as exc:
            raise CannotEvaluate(str(exc)) from exc


@judge.command("compare")
@_compare_options
@_judge_options
@_store_options
def compare_command(panel_id: str, baseline: str, candidate: str, rubric_id: str, since: str, confidence: float,
                    resamples: int, min_pairs: int, as_json: bool, data_dir: Path, project: str | None,
                    key: str | None, **opts: Any) -> None:
    """Score both versions' outputs on a panel and print the difference with a confidence interval."""
    outcome = _run_compare(panel_id, baseline, candidate, rubric_id, since, confidence, resamples, min_pairs,
                           data_dir, project, key, opts)
    click.echo(json.dumps(outcome["comparison"], indent=2) if as_json else outcome["description"])


@judge.command("gate")
@_compare_options
@click.option("--max-drop", type=click.FloatRange(0), default=0.0, show_default=True,
              help="Score points the candidate may lose against the baseline.")
@click.option("--rule", type=click.Choice(["significant", "noninferior"]), default="significant", show_default=True,
              help="significant: fail when the CI lies wholly below -max-drop; "
                   "noninferior: fail unless the CI lies wholly above -max-drop.")
@_judge_options
@_store_options
def gate_command(panel_id: str, baseline: str, candidate: str, rubric_id: str, since: str, confidence: float,
                 resamples: int, min_pairs: int, as_json: bool, max_drop: float, rule: str, data_dir: Path,
                 project: str | None, key: str | None, **opts: Any) -> None:
    """Exit 1 when the candidate is worse than the baseline beyond --max-drop (0 pass, 3 undecided)."""
    outcome = _run_compare(panel_id, baseline, candidate, rubric_id, since, confidence, resamples, min_pairs,
                           data_dir, project, key, opts, {"max_drop": max_drop, "rule": rule})
    verdict = outcome["gate"]
    if as_json:
        click.echo(json.dumps({**outcome["comparison"], "gate": verdict}, indent=2))
    else:
        click.echo(outcome["description"])
        click.echo(verdict["message"])
    if not verdict["passed"]:
        click.get_current_context().exit(1)


@judge.command("spend")
@click.option("--since", default="7d", show_default=True, help="Since when (15m, 24h, 7d or ISO time).")
@_store_options
def spend_command(since: str, data_dir: Path, project: str | None, key: str | None) -> None:
    """The judge's own spend per day, model and purpose (sampled judging vs panels)."""
    from infersight.collector.store import usd_text

    from ._records import judge_spend

    since_ns = _since_ns(since)
    with _source(data_dir, key) as source:
        scope = _project(source, project)
        rows = (_ask(source, "GET", "/api/v1/judge/spend", {"since_ns": since_ns})["rows"] if _remote(source)
                else judge_spend(source, scope, since_ns))
    click.echo(f"{'DAY':<12}{'JUDGE MODEL':<28}{'PURPOSE':<9}{'CALLS':>7}{'SCORED':>8}{'FAILED':>8}{'COST':>12}")
    for r in rows:
        cost = usd_text(float(r["usd"])) + ("*" if int(r["uncosted_calls"]) else "")
        click.echo(f"{r['day']:<12}{r['judge_model']:<28}{r['purpose']:<9}{int(r['calls']):>7}"
                   f"{int(r['scored']):>8}{int(r['failed']):>8}{cost:>12}")
    if any(int(r["uncosted_calls"]) for r in rows):
        click.echo("* some calls have no known price (pass --price-input-mtok/--price-output-mtok)", err=True)


@judge.command("scores")
@click.option("--since", default="7d", show_default=True, help="Since when (15m, 24h, 7d or ISO time).")
@_store_options
def scores_command(since: str, data_dir: Path, project: str | None, key: str | None) -> None:
    """Mean judge score per route, app version, judge model and rubric version."""
    from ._records import scores_summary

    since_ns = _since_ns(since)
    with _source(data_dir, key) as source:
        scope = _project(source, project)
        rows = (_ask(source, "GET", "/api/v1/judge/scores", {"since_ns": since_ns})["rows"] if _remote(source)
                else scores_summary(source, scope, since_ns))
    click.echo(f"{'ROUTE':<24}{'VERSION':<14}{'JUDGE MODEL':<24}{'RUBRIC':<28}{'N':>6}{'MEAN':>7}{'WEIGHTED':>10}")
    for r in rows:
        rubric = f"{r['rubric_id']}@v{r['rubric_version']}"
        click.echo(f"{r['route']:<24}{r['service_version']:<14}{r['judge_model']:<24}{rubric:<28}"
                   f"{int(r['scores']):>6}{float(r['mean_score']):>7.2f}{float(r['weighted_mean_score']):>10.2f}")


@judge.group("rubrics")
def rubrics_group() -> None:
    """Built-in and custom rubrics, and their version lock."""


@rubrics_group.command("list")
@click.option("--rubrics-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="A folder of rubric files beside the built-in ones.")
def rubrics_list(rubrics_dir: Path | None) -> None:
    """List rubrics with their versions; fails when one changed without a version bump."""
    from ._errors import RubricError
    from ._rubrics import load_rubrics

    try:
        found = load_rubrics(rubrics_dir)
    except RubricError as exc:
        raise click.ClickException(str(exc)) from exc
    for rubric in found.values():
        click.echo(f"{rubric.key:<36}{rubric.description}")


@rubrics_group.command("lock")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False, exists=True))
def rubrics_lock(folder: Path) -> None:
    """Record new rubric versions in FOLDER/rubrics.lock.json (never rewrites a recorded one)."""
    from ._errors import RubricError
    from ._rubrics import lock_rubrics

    try:
        added = lock_rubrics(folder)
    except RubricError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo("Recorded " + ", ".join(added) if added else "Nothing new to record.")
