"""Where LLM money leaks: the same prompt sent again and again, and whole documents in a prompt.

"The model is expensive" usually turns out to be one of two things:

* a **cost loop** (``cost_loop.trace``, ``cost_loop.tenant``): the same prompt called at least
  ``trace_min_calls`` times one after another within one trace, or ``tenant_min_calls`` times
  by one tenant and user, within ``window`` (calls in flight together count once: that is
  sampling, not looping). A retrying agent, a recursion bug, a client resubmitting on every
  render. Same prompt means the same hash of the normalised input messages
  (:func:`prompt_hash`). Every call of the loop is reported, the first ones included, each
  with the loop's size and money so far; the money involved is the sum of their costs.
* **context stuffing** (``context_stuffing.input_tokens``): input tokens far above the route's
  usual range, robustly: above the median plus ``k`` MADs (on the log scale, as prompt sizes
  vary by factors), above the route's 99th percentile, at least ``min_ratio`` times the median
  and at least ``min_tokens``. The money involved is what the tokens above the route's median
  cost.

Pure Python (no numpy), no I/O: the windowed runner queries the store and hands the calls over.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from ._base import Detection, check_param
from ._fitted import (
    check_duration,
    check_fitted,
    check_positive_int,
    check_probability,
    is_number,
    quantile,
)
from ._messages import parse_messages
from ._money_text import usd_text


@dataclass(frozen=True, slots=True)
class LLMCall:
    """One LLM call as the windowed detectors see it (a row of ``llm_spans`` plus its prompt).

    Attributes:
        ts_ns: start time, nanoseconds since the epoch.
        trace_id, span_id: where it is.
        prompt_hash: :func:`prompt_hash` of its input messages; empty when not captured.
        tenant, user_id, route, model, provider, service: who and what.
        input_tokens, output_tokens: usage (input includes cached tokens).
        cost_usd: what it cost, when known.
        duration_s: how long it took; calls in flight together are one round of a loop.
    """

    ts_ns: int
    trace_id: str
    span_id: str
    prompt_hash: str = ""
    tenant: str = ""
    user_id: str = ""
    route: str = ""
    model: str = ""
    provider: str = ""
    service: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class SpanFinding:
    """A detection on one call.

    Attributes:
        call: the call it is about.
        detection: what was found, with evidence.
        known_at_ns: when the evidence was complete: a loop's earlier calls are only known to
            be part of it once the threshold-crossing call arrives. The windowed runner reports
            a finding in the window that contains this moment, so each is reported once.
        cost_usd: the money this finding accounts for: the call's cost for a loop, the cost of
            the excess tokens for stuffing; None when unknown. Summing it over findings gives
            the money involved without double counting.
    """

    call: LLMCall
    detection: Detection
    known_at_ns: int
    cost_usd: float | None


def prompt_hash(messages: str) -> str:
    """A short stable hash of a prompt: GenAI input messages with whitespace and case normalised.

    Role and text of every message count; non-text parts count by their JSON. A string that is
    not JSON is hashed as text. Never raises; an empty or blank prompt hashes to ``""``.
    """
    if not isinstance(messages, str) or not messages.strip():
        return ""
    digest = hashlib.sha256()
    blank = ""  # before every piece but the first: the words of all texts, one blank apart
    for message in parse_messages(messages):
        for text in (message.role, *(part.text for part in message.parts)):
            for piece in _word_pieces(text):
                digest.update((blank + piece).casefold().encode("utf-8", "replace"))
                blank = " "
    return digest.hexdigest()[:16]


# A text is normalised this many characters at a time (cut at a blank): split() on a 60 MiB
# prompt made ~10 million words at once, ~0.9 GiB in a decode worker whose bound is 406 MiB.
_PIECE_CHARS = 1 << 16
_BLANK = re.compile(r"\s")


def _word_pieces(text: str) -> Iterator[str]:
    """The words of ``text`` one blank apart, in pieces cut between words (none empty).

    split() and join, not a regular expression's sub: the same whitespace (str.isspace is what
    re's \\s matches) at 4x the speed on a 2 KB prompt, paid for every span that may pair.
    """
    start = 0
    while start < len(text):
        cut = len(text)
        if cut - start > _PIECE_CHARS and (found := _BLANK.search(text, start + _PIECE_CHARS)) is not None:
            cut = found.start()
        words = text[start:cut].split()
        if words:
            yield " ".join(words)
        start = cut


class CostLoopDetector:
    """Find calls that repeat the same prompt within a trace or for one tenant and user.

    Keyword-only parameters:
        trace_min_calls: identical prompts within one trace (inside ``window``) that make a loop.
        tenant_min_calls: identical prompts from one tenant and user inside ``window``.
        window: how close together the calls must be.

    A rule, not a model: nothing to fit. ``detect`` is pure CPU, keeps no state, never mutates
    its input and is safe to share between threads. Calls without a prompt hash (content not
    captured) are never flagged: precision first.
    """

    name = "cost_loop"
    version = "1.0"
    reads = ("llm_spans", "otel_traces.SpanAttributes['gen_ai.input.messages']")

    def __init__(
        self,
        *,
        trace_min_calls: int = 5,
        tenant_min_calls: int = 20,
        window: timedelta = timedelta(minutes=10),
    ) -> None:
        owner = type(self).__name__
        check_positive_int(owner, "trace_min_calls", trace_min_calls, minimum=2)
        check_positive_int(owner, "tenant_min_calls", tenant_min_calls, minimum=2)
        check_duration(owner, "window", window)
        self.trace_min_calls = trace_min_calls
        self.tenant_min_calls = tenant_min_calls
        self.window = window

    def detect(self, calls: Iterable[LLMCall]) -> list[SpanFinding]:
        """Every call that belongs to a loop, once, ordered by time.

        Identical prompts of a group (a trace, or a tenant and user) that overlap in time form
        one round: parallel samples of one prompt are a deliberate fan-out, while a loop calls
        again after each answer. A call belongs to a loop when some run of ``window`` containing
        its round holds at least the minimum number of rounds; it is *known* when the first
        such run's last round starts. A call in both a trace loop and a tenant loop is reported
        by whichever is known first (the trace loop on a tie).
        """
        window_ns = int(self.window.total_seconds() * 1e9)
        by_trace: dict[tuple[str, str], list[LLMCall]] = defaultdict(list)
        by_tenant: dict[tuple[str, str, str], list[LLMCall]] = defaultdict(list)
        for call in calls:
            if not call.prompt_hash:
                continue
            if call.trace_id:
                by_trace[(call.trace_id, call.prompt_hash)].append(call)
            by_tenant[(call.tenant, call.user_id, call.prompt_hash)].append(call)
        best: dict[tuple[str, str], SpanFinding] = {}
        for rule, groups, minimum in (("trace", by_trace, self.trace_min_calls),
                                      ("tenant", by_tenant, self.tenant_min_calls)):
            for group in groups.values():
                if len(group) < minimum:
                    continue
                for finding in self._loops(rule, group, minimum, window_ns):
                    key = (finding.call.trace_id, finding.call.span_id)
                    if key not in best or finding.known_at_ns < best[key].known_at_ns:
                        best[key] = finding
        return sorted(best.values(), key=lambda f: (f.call.ts_ns, f.call.span_id, f.detection.label))

    def _loops(self, rule: str, group: list[LLMCall], minimum: int, window_ns: int) -> list[SpanFinding]:
        rounds = _rounds(sorted(group, key=lambda c: (c.ts_ns, c.span_id)))
        starts = [r[0].ts_ns for r in rounds]
        # Prefix sums over rounds (calls, priced calls, picodollars as integers, so that a run's
        # total does not depend on where the sums started): a run's totals in O(1).
        calls, priced, picodollars = [0], [0], [0]
        for r in rounds:
            known = [c.cost_usd for c in r if c.cost_usd is not None and math.isfinite(c.cost_usd)]
            calls.append(calls[-1] + len(r))
            priced.append(priced[-1] + len(known))
            picodollars.append(picodollars[-1] + sum(round(cost * 1e12) for cost in known))
        out = []
        claimed_upto = -1
        for last in range(len(rounds)):
            first = bisect.bisect_right(starts, starts[last] - window_ns, 0, last)
            size = last - first + 1
            if size < minimum:
                continue
            # Rounds first..last cross the threshold: every call in them not yet claimed by an
            # earlier run is known to be looping now, when round ``last`` starts.
            n_calls = calls[last + 1] - calls[first]
            n_priced = priced[last + 1] - priced[first]
            loop_cost = (picodollars[last + 1] - picodollars[first]) / 1e12 if n_priced else None
            crossing = rounds[last][0]
            for r in rounds[max(first, claimed_upto + 1):last + 1]:
                for member in r:
                    out.append(self._finding(rule, member, crossing, size, n_calls, loop_cost, n_priced < n_calls))
            claimed_upto = last
        return out

    def _finding(self, rule: str, member: LLMCall, crossing: LLMCall, rounds: int, calls: int,
                 loop_cost: float | None, partial_cost: bool) -> SpanFinding:
        span = f"{self.window.total_seconds() / 60:g} min"
        where = (f"in trace {member.trace_id[:16]}" if rule == "trace"
                 else f"from tenant {member.tenant or '(none)'!r}"
                 + (f" user {member.user_id!r}" if member.user_id else ""))
        times = f"{rounds}x" + (f" ({calls} calls)" if calls != rounds else "")
        money = "cost unknown" if loop_cost is None else (
            f"{usd_text(loop_cost)} for those calls" + (" (some unpriced)" if partial_cost else ""))
        this = f"this call {usd_text(member.cost_usd)}" if member.cost_usd is not None else "this call unpriced"
        evidence = f"same prompt {times} {where} within {span}: {money}, {this}; prompt {member.prompt_hash[:12]}"
        detection = Detection(self.name, self.version, f"{self.name}.{rule}", 1.0, evidence)
        # A call of the crossing round may start after the round does: known once it exists.
        return SpanFinding(member, detection, max(crossing.ts_ns, member.ts_ns), member.cost_usd)


def _rounds(calls: list[LLMCall]) -> list[list[LLMCall]]:
    """Group calls (sorted by start) into rounds of calls that overlap in time.

    A loop is sequential: each call starts after the previous one ended, because it acts on its
    result. Identical calls in flight together are a deliberate fan-out (sampling several
    answers to one prompt, self-consistency), so a round counts once.
    """
    rounds: list[list[LLMCall]] = []
    round_end = -1
    for call in calls:
        if rounds and call.ts_ns < round_end:
            rounds[-1].append(call)
            round_end = max(round_end, call.ts_ns + int(call.duration_s * 1e9))
        else:
            rounds.append([call])
            round_end = call.ts_ns + int(call.duration_s * 1e9)
    return rounds


class ContextStuffingDetector:
    """Find calls whose input is far larger than their route usually sends.

    Keyword-only parameters:
        k: how many scaled MADs (1.4826 x median absolute deviation) of log1p(tokens) above
            the median: ``k=4`` on a route whose sizes vary by a factor e^0.5 is 7x its median.
        quantile: the reference quantile the input must also exceed (0.99).
        min_ratio: how many times the median the input must also be.
        min_tokens: the smallest input worth reporting, whatever the route.
        min_samples: reference calls needed before judging the route at all.
        price: prices a call the way spans are priced, with the signature of
            :func:`infersight.sdk.cost_usd` (which the collector passes); ``None``: the excess
            cost is only bounded from the call's own cost.

    ``fit(input_tokens)`` learns one route's ``median_``, ``log_mad_``, ``quantile_value_`` and
    ``threshold_`` (in tokens; infinite when the reference is too small). ``score`` returns the
    raw score of each call, its input tokens over the route's median; a call is stuffed when
    its tokens exceed ``threshold_``, that is when its score exceeds ``threshold_ / median_``.
    Pure CPU; ``fit`` mutates the instance, ``score`` and ``detect`` only read it.
    """

    name = "context_stuffing"
    version = "1.0"
    reads = ("llm_spans.input_tokens", "llm_spans.cost_usd", "llm_spans.model")

    def __init__(
        self,
        *,
        k: float = 4.0,
        quantile: float = 0.99,
        min_ratio: float = 3.0,
        min_tokens: int = 4000,
        min_samples: int = 200,
        price: Pricer | None = None,
    ) -> None:
        owner = type(self).__name__
        check_param(owner, "k", k, is_number(k) and k > 0, "a positive number")
        check_probability(owner, "quantile", quantile)
        check_param(owner, "min_ratio", min_ratio, is_number(min_ratio) and min_ratio >= 1, "a number >= 1")
        check_positive_int(owner, "min_tokens", min_tokens)
        check_positive_int(owner, "min_samples", min_samples)
        check_param(owner, "price", price, price is None or callable(price),
                    "a function with the signature of infersight.sdk.cost_usd, or None")
        self.k = k
        self.quantile = quantile
        self.min_ratio = min_ratio
        self.min_tokens = min_tokens
        self.min_samples = min_samples
        self.price = price

    def fit(self, input_tokens: Iterable[float]) -> ContextStuffingDetector:
        """Learn the route's usual input size from its reference calls' input tokens."""
        values = sorted(float(v) for v in input_tokens if is_number(v) and v >= 0)
        self.n_reference_ = len(values)
        if not values:
            self.median_ = self.log_mad_ = self.quantile_value_ = math.nan
            self.threshold_ = math.inf
            return self
        median = quantile(values, 0.5)
        # Token counts are multiplicative (a prompt is 2x longer, not 300 tokens longer), so the
        # MAD rule works on log1p(tokens): k MADs there is a factor, whatever the route's size.
        logs = [math.log1p(v) for v in values]
        log_median = quantile(logs, 0.5)
        log_mad = quantile(sorted(abs(v - log_median) for v in logs), 0.5)
        self.median_ = median
        self.log_mad_ = log_mad
        self.quantile_value_ = quantile(values, self.quantile)
        self.threshold_ = math.inf if len(values) < self.min_samples else max(
            math.expm1(log_median + self.k * 1.4826 * log_mad),
            self.quantile_value_,
            self.min_ratio * median,
            float(self.min_tokens),
        )
        return self

    def score(self, input_tokens: Sequence[float]) -> list[float]:
        """Each call's input tokens as a multiple of the route's median (the raw score)."""
        check_fitted(self, "threshold_")
        base = self.median_ if self.median_ and self.median_ > 0 else 1.0
        return [float(v) / base for v in input_tokens]

    def detect(self, calls: Iterable[LLMCall]) -> list[SpanFinding]:
        """The stuffed calls among ``calls`` (all of one route), each with its excess cost."""
        check_fitted(self, "threshold_")
        out = []
        for call in calls:
            if not call.input_tokens > self.threshold_:
                continue
            median = self.median_
            excess = call.input_tokens - median
            excess_cost, bound = _excess_cost_usd(call, median, self.price)
            money = ("excess cost unknown" if excess_cost is None
                     else f"excess {'≤ ' if bound else ''}{usd_text(excess_cost)}")
            ratio = call.input_tokens / median if median > 0 else math.inf
            evidence = (f"input {call.input_tokens:,} tokens = {ratio:.1f}x the route's median "
                        f"{median:,.0f} (threshold {self.threshold_:,.0f}): {excess:,.0f} excess tokens, {money}")
            detection = Detection(self.name, self.version, f"{self.name}.input_tokens",
                                  1.0 - self.threshold_ / call.input_tokens, evidence)
            out.append(SpanFinding(call, detection, call.ts_ns, excess_cost))
        return out


class Pricer(Protocol):
    """The USD cost of one call and where the price came from, ``None`` for an unknown model."""

    def __call__(
        self, model: str, *, input_tokens: int, output_tokens: int, provider: str | None = None
    ) -> tuple[float, str] | None: ...


def _excess_cost_usd(call: LLMCall, median_tokens: float, price: Pricer | None) -> tuple[float | None, bool]:
    """What the input above the route's median cost, and whether that is only an upper bound.

    With ``price``: the call's cost minus the same call with a median-sized input, so tiered
    prices are right. For a model it does not know (or without it), the call's own cost times
    the excess share of its input is an upper bound (its output tokens cost something too).
    """
    excess = max(call.input_tokens - median_tokens, 0.0)
    actual = usual = None
    if price is not None:
        try:
            provider = call.provider or None
            actual = price(call.model, input_tokens=call.input_tokens, output_tokens=call.output_tokens,
                           provider=provider)
            usual = price(call.model, input_tokens=round(median_tokens), output_tokens=call.output_tokens,
                          provider=provider)
        except Exception:  # noqa: BLE001 - pricing is best effort; the finding stands without it
            actual = usual = None
    if actual is not None and usual is not None:
        return max(actual[0] - usual[0], 0.0), False
    if call.cost_usd is not None and call.input_tokens > 0:
        return call.cost_usd * excess / call.input_tokens, True
    return None, False
