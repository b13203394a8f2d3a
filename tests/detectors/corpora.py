"""Generated corpora with known answers, and the precision/recall report over them.

The tests print the report (``tests/detectors/conftest.py`` adds it to pytest's summary) and
``bench/detectors.py`` writes it in markdown for BENCHMARKS.md. Everything is seeded: the same
code gives the same numbers.

Units differ by detector: drift is judged per window (one evaluation of a current window
against a reference), loops and stuffing per call, inline detectors per answer.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from infersight import sdk
from infersight.detectors import (
    ContextStuffingDetector,
    CostLoopDetector,
    JsonDetector,
    LLMCall,
    NumericDriftDetector,
    RefusalDetector,
    RepetitionDetector,
    SpanText,
    TextDriftDetector,
    prompt_hash,
)

from .texts import NORMAL_TEXTS


@dataclass(frozen=True)
class Score:
    """Confusion counts of one detector on one corpus."""

    detector: str
    corpus: str
    unit: str
    tp: int
    fp: int
    fn: int
    tn: int
    note: str = ""

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def false_alarm_rate(self) -> float:
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else 0.0


def markdown(scores: list[Score]) -> str:
    """The report as a markdown table."""
    lines = [
        "| detector | corpus | unit | positives | negatives | precision | recall | false alarms | note |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for s in scores:
        lines.append(
            f"| {s.detector} | {s.corpus} | {s.unit} | {s.tp + s.fn} | {s.fp + s.tn} | {s.precision:.3f} "
            f"| {s.recall:.3f} | {s.fp} ({s.false_alarm_rate:.2%}) | {s.note} |"
        )
    return "\n".join(lines)


# -- numbers ---------------------------------------------------------------------------------------

NUMERIC_SHIFTS: dict[str, tuple[dict[str, float], str]] = {
    # scenario: (generator arguments, the feature that must be named)
    "answers 40% longer": ({"output_scale": 1.4}, "output_tokens"),
    "prompts 1.8x longer": ({"input_scale": 1.8}, "input_tokens"),
    "decoding 40% slower": ({"tpot_scale": 1.4}, "duration_s"),
    "queue wait 4x": ({"queue_scale": 4.0}, "ttft_s"),
    "price 1.5x (model swap)": ({"price_scale": 1.5}, "cost_usd"),
}


def numeric_window(
    rng: np.random.Generator, n: int, *, output_scale: float = 1.0, input_scale: float = 1.0,
    tpot_scale: float = 1.0, queue_scale: float = 1.0, price_scale: float = 1.0,
) -> dict[str, np.ndarray]:
    """``n`` requests of a chat route: lognormal token counts (answers capped at 1024),
    TTFT = queue wait + prefill, latency = TTFT + tokens x time per token, a quarter of the
    calls not streamed (no TTFT), cost from tokens."""
    input_tokens = np.round(rng.lognormal(math.log(900), 0.7, n) * input_scale) + 1
    output_tokens = np.minimum(np.round(rng.lognormal(math.log(220), 0.6, n) * output_scale), 1024) + 1
    queue = rng.exponential(0.05 * queue_scale, n)
    ttft = queue + input_tokens * 4e-5 * rng.uniform(0.8, 1.2, n) + rng.gamma(3.0, 0.03, n)
    tpot = np.clip(rng.normal(0.015, 0.002, n), 0.005, None) * tpot_scale
    duration = ttft + output_tokens * tpot
    ttft_seen = np.where(rng.random(n) < 0.75, ttft, np.nan)
    cost = (input_tokens * 0.15 + output_tokens * 0.60) / 1e6 * price_scale
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "duration_s": duration,
            "ttft_s": ttft_seen, "cost_usd": cost}


def numeric_scores(references: int, nulls_per_reference: int, n_reference: int = 2000,
                   n_current: int = 800) -> Score:
    """Each reference window is fitted once and judges no-change windows and one window per shift.

    800 current requests: a quarter are not streamed, and TTFT needs 500 values of its own.
    """
    tp = fp = fn = tn = named = 0
    for seed in range(references):
        rng = np.random.default_rng(1000 + seed)
        detector = NumericDriftDetector(random_state=seed).fit(numeric_window(rng, n_reference))
        for _ in range(nulls_per_reference):
            if detector.detect(numeric_window(rng, n_current)).drifted:
                fp += 1
            else:
                tn += 1
        for kwargs, feature in NUMERIC_SHIFTS.values():
            report = detector.detect(numeric_window(rng, n_current, **kwargs))
            if report.drifted:
                tp += 1
                named += feature in {f.feature for f in report.moved}
            else:
                fn += 1
    return Score("drift.numeric", f"{len(NUMERIC_SHIFTS)} kinds of shift vs no change, "
                 f"{n_reference:,} vs {n_current:,} requests", "window", tp, fp, fn, tn,
                 f"shifted feature named in {named}/{tp}")


# -- texts -------------------------------------------------------------------------------------------

TOPICS = {
    "account": [
        "password", "login", "reset", "account", "email", "verify", "username", "locked", "sign",
        "two", "factor", "code", "profile", "settings", "security", "recover",
    ],
    "shipping": [
        "order", "shipping", "delivery", "package", "tracking", "courier", "address", "arrived",
        "late", "parcel", "dispatch", "warehouse", "customs", "express",
    ],
    "billing": [
        "refund", "invoice", "charge", "payment", "card", "billing", "subscription", "receipt",
        "charged", "twice", "discount", "coupon", "vat", "plan",
    ],
    "product": [
        "battery", "screen", "charger", "warranty", "model", "size", "colour", "feature", "manual",
        "update", "bluetooth", "pairing", "firmware",
    ],
}
_FILLER = [
    "the", "a", "to", "and", "of", "in", "is", "for", "on", "with", "how", "can", "my", "do",
    "what", "please", "help", "me", "about", "this", "that", "it", "i", "you", "we", "was", "have",
    "not", "but", "when", "why", "hi", "hello", "thanks", "again", "still", "need", "know", "get",
]
# A long tail of everyday words, so documents are not made of topic words alone.
_TAIL = [f"w{i:04d}" for i in range(3000)]
_TAIL_CDF = np.cumsum(1.0 / np.arange(1, len(_TAIL) + 1) ** 1.05)
_TAIL_CDF /= _TAIL_CDF[-1]


def text_document(rng: np.random.Generator, topic: str) -> str:
    words = TOPICS[topic]
    picked = ([_FILLER[i] for i in rng.integers(0, len(_FILLER), rng.integers(6, 18))]
              + [_TAIL[i] for i in np.searchsorted(_TAIL_CDF, rng.random(rng.integers(4, 20)))]
              + [words[i] for i in rng.integers(0, len(words), rng.integers(2, 6))])
    rng.shuffle(picked)
    return " ".join(picked).capitalize() + "?"


def text_corpus(rng: np.random.Generator, n: int, mix: dict[str, float]) -> list[str]:
    topics = list(mix)
    p = np.array([mix[t] for t in topics], dtype=float)
    return [text_document(rng, topics[i]) for i in rng.choice(len(topics), n, p=p / p.sum())]


TEXT_BASE = {"account": 0.5, "shipping": 0.5}
TEXT_SHIFTS = {
    "new topic at 30%": ({"account": 0.35, "shipping": 0.35, "billing": 0.3}, "billing"),
    "topic mix 50/50 -> 85/15": ({"account": 0.85, "shipping": 0.15}, "account"),
}


def text_scores(references: int, nulls_per_reference: int, n_reference: int = 1000,
                n_current: int = 500) -> Score:
    tp = fp = fn = tn = named = 0
    for seed in range(references):
        rng = np.random.default_rng(2000 + seed)
        detector = TextDriftDetector(random_state=seed).fit(text_corpus(rng, n_reference, TEXT_BASE))
        for _ in range(nulls_per_reference):
            if detector.detect(text_corpus(rng, n_current, TEXT_BASE)).drifted:
                fp += 1
            else:
                tn += 1
        for mix, topic in TEXT_SHIFTS.values():
            report = detector.detect(text_corpus(rng, n_current, mix))
            if report.drifted:
                tp += 1
                named += any(t.term in TOPICS[topic] for t in report.current_terms[:3])
            else:
                fn += 1
    return Score("drift.text", f"{len(TEXT_SHIFTS)} kinds of topic shift vs no change, "
                 f"{n_reference:,} vs {n_current:,} texts", "window", tp, fp, fn, tn,
                 f"new topic's words among the top 3 in {named}/{tp}")


# -- calls: loops and stuffing -------------------------------------------------------------------------


@dataclass
class CallCorpus:
    calls: list[LLMCall] = field(default_factory=list)
    looping: set[str] = field(default_factory=set)  # span ids of calls inside injected loops


def _messages(text: str) -> str:
    return json.dumps([{"role": "system", "parts": [{"type": "text", "content": "You are a helpful agent."}]},
                       {"role": "user", "parts": [{"type": "text", "content": text}]}])


def call_corpus(seed: int, minutes: int = 120) -> CallCorpus:
    """Multi-tenant agent traffic with injected loops and the legitimate look-alikes.

    Legitimate: agent traces of 1-6 calls with distinct prompts; retries of one prompt 2-4
    times in a trace; a canned prompt ("summarise today's release notes") sent by many users
    of every tenant; self-consistency sampling (5 identical calls in flight together in a
    trace). Every call takes 0.8 s. Injected: trace loops
    (6-14 identical calls seconds apart) and resubmission storms (one user, 22-40 identical
    calls in 4-8 minutes, a trace each).
    """
    rng = random.Random(seed)
    corpus = CallCorpus()
    users = [(f"tenant-{t:02d}", f"user-{t:02d}-{u}") for t in range(40) for u in range(rng.randint(1, 5))]
    counter = iter(range(10**9))

    def add(ts_s: float, trace: str, tenant: str, user: str, text: str, looping: bool = False) -> None:
        span = f"{seed:04x}{next(counter):012x}"
        tokens = 200 + len(text) * 3
        corpus.calls.append(LLMCall(
            ts_ns=int(ts_s * 1e9), trace_id=trace, span_id=span, prompt_hash=prompt_hash(_messages(text)),
            tenant=tenant, user_id=user, route="agent.step", model="gpt-4o-mini", input_tokens=tokens,
            output_tokens=150, cost_usd=(tokens * 0.15 + 150 * 0.6) / 1e6, duration_s=0.8,
        ))
        if looping:
            corpus.looping.add(span)

    for minute in range(minutes):
        for _ in range(30):
            t0 = minute * 60 + rng.random() * 60
            tenant, user = rng.choice(users)
            trace = f"{seed:04x}t{next(counter):027x}"
            if rng.random() < 0.1:
                add(t0, trace, tenant, user, "Summarise today's release notes for me.")
                continue
            if rng.random() < 0.005:  # self-consistency: 5 samples of one prompt, by design
                text = f"Classify ticket {trace[-8:]} as bug, question or request."
                for i in range(5):
                    add(t0 + i * 0.1, trace, tenant, user, text)
                continue
            for step in range(rng.randint(1, 6)):
                text = f"Step {step} of task {trace[-8:]}: look up order {rng.randint(1, 10**6)} and decide."
                for attempt in range(rng.choice([1] * 12 + [2, 3, 4])):
                    add(t0 + step * 3 + attempt, trace, tenant, user, text)
        if minute % 15 == 7:  # a trace loop
            tenant, user = rng.choice(users)
            trace = f"{seed:04x}L{next(counter):027x}"
            text = f"Parse the tool result {rng.random()} and call the tool again."
            t = minute * 60 + rng.random() * 30
            for _ in range(rng.randint(6, 14)):
                add(t, trace, tenant, user, text, looping=True)
                t += rng.uniform(1, 3)  # each call after the previous answer
        if minute % 40 == 20:  # a resubmission storm, a new trace per click
            tenant, user = rng.choice(users)
            text = f"Regenerate the quarterly summary {rng.random()}"
            count, span_s = rng.randint(22, 40), rng.uniform(240, 480)
            for i in range(count):
                add(minute * 60 + i * span_s / count, f"{seed:04x}S{next(counter):027x}", tenant, user, text,
                    looping=True)
    return corpus


def loop_scores(seeds: int, minutes: int = 120) -> Score:
    tp = fp = fn = tn = 0
    money = 0.0
    detector = CostLoopDetector()
    for seed in range(seeds):
        corpus = call_corpus(seed, minutes)
        found = {f.call.span_id: f for f in detector.detect(corpus.calls)}
        money += sum(f.cost_usd or 0.0 for f in found.values())
        for call in corpus.calls:
            flagged, looping = call.span_id in found, call.span_id in corpus.looping
            tp += flagged and looping
            fp += flagged and not looping
            fn += looping and not flagged
            tn += not flagged and not looping
    return Score("cost_loop", f"agent traffic, 40 tenants, {minutes} min x {seeds}, injected loops and storms",
                 "call", tp, fp, fn, tn, f"looping calls cost ${money:.4f} in total")


ROUTES = {  # route: (median input tokens, spread as a lognormal sigma)
    "chat": (150, 0.8),
    "support.answer": (900, 0.5),
    "rag.answer": (3000, 0.4),
    "summarise": (6000, 0.9),
}


def stuffing_scores(seeds: int, n_reference: int = 3000, n_current: int = 3000,
                    stuffed_share: float = 0.005) -> Score:
    """Routes with lognormal prompt sizes; a few calls get a whole document (15k-80k tokens) added.

    On a route whose own sizes vary widely (``summarise``: p99 near 50k) such an addition is
    within the usual range, and the detector is meant to stay quiet: those count as misses.
    """
    tp = fp = fn = tn = 0
    excess_usd = 0.0
    missed: dict[str, int] = {}
    for seed in range(seeds):
        rng = np.random.default_rng(3000 + seed)
        for route, (median, sigma) in ROUTES.items():
            reference = np.round(rng.lognormal(math.log(median), sigma, n_reference))
            detector = ContextStuffingDetector(price=sdk.cost_usd).fit(reference)
            sizes = np.round(rng.lognormal(math.log(median), sigma, n_current)).astype(int)
            stuffed = rng.random(n_current) < stuffed_share
            sizes[stuffed] += rng.integers(15_000, 80_000, int(stuffed.sum()))
            calls = [LLMCall(ts_ns=i, trace_id="t", span_id=str(i), route=route, model="gpt-4o-mini",
                             provider="openai", input_tokens=int(s), output_tokens=300) for i, s in enumerate(sizes)]
            found = {f.call.span_id: f for f in detector.detect(calls)}
            excess_usd += sum(f.cost_usd or 0.0 for f in found.values())
            for i in range(n_current):
                flagged, bad = str(i) in found, bool(stuffed[i])
                tp += flagged and bad
                fp += flagged and not bad
                fn += bad and not flagged
                tn += not flagged and not bad
                if bad and not flagged:
                    missed[route] = missed.get(route, 0) + 1
    misses = ", ".join(f"{n} in {route} (median {ROUTES[route][0]:,}, p99 "
                       f"{ROUTES[route][0] * math.exp(2.326 * ROUTES[route][1]):,.0f})" for route, n in missed.items())
    return Score("context_stuffing", f"{len(ROUTES)} routes (median 150-6,000 tokens) x {seeds}, "
                 f"{stuffed_share:.1%} of calls stuffed", "call", tp, fp, fn, tn,
                 f"excess input cost ${excess_usd:.2f}; missed: {misses or 'none'}")


# -- inline detectors ------------------------------------------------------------------------------------

_SENTENCES = [
    "The cache keeps the hottest keys in memory and evicts the least recently used ones.",
    "Start by measuring the p95 latency before and after the change.",
    "Each worker pulls a batch from the queue, processes it and acknowledges it.",
    "If the request fails with a timeout, retry it with exponential backoff and jitter.",
    "The index speeds up lookups by tenant but slows down inserts slightly.",
    "Write the migration so that it can run twice without harm.",
    "A smaller model handles the easy questions and the large one the rest.",
    "Log the prompt version with every call so that regressions can be traced.",
    "The report groups the costs by tenant, route and model.",
    "Streaming lets the user read the first words while the rest is generated.",
    "Keep the system prompt short: every token is paid on every call.",
    "Compare the judge scores only within one rubric version.",
]


def _prose(rng: random.Random, sentences: int) -> str:
    # Distinct sentences: an answer that says the same sentence twice is what the repetition
    # detector looks for, not an ordinary answer.
    return " ".join(rng.sample(_SENTENCES, min(sentences, len(_SENTENCES))))


def inline_corpus(seed: int) -> dict[str, list[tuple[SpanText, bool]]]:
    """Per detector, (span, is it a failure) pairs: generated failures and ordinary answers."""
    rng = random.Random(seed)
    normal = [SpanText(output_text=t) for t in NORMAL_TEXTS.values()]
    normal += [SpanText(output_text=_prose(rng, rng.randint(3, 12))) for _ in range(60)]
    loops = []
    for i in range(60):
        unit = " ".join(rng.sample(_SENTENCES, rng.randint(1, 2))) + " "
        if i % 3 == 0:
            tail = "".join(f"Attempt {n}: {unit}" for n in range(rng.randint(3, 30), 40))
        else:
            tail = unit * rng.randint(4, 12)
        text = _prose(rng, rng.randint(1, 5)) + " " + tail
        loops.append(SpanText(output_text=text[: len(text) - rng.randint(0, len(unit) - 1)], finish_reason="length"))

    records = [{"id": rng.randint(1, 10**6), "name": rng.choice(["alpha", "beta", "gamma"]),
                "tags": rng.sample(["a", "b", "c", "d"], 2), "score": round(rng.random(), 3),
                "nested": {"ok": rng.random() < 0.5, "items": list(range(rng.randint(0, 5)))}}
               for _ in range(80)]
    good_json = [SpanText(output_text=json.dumps(r, indent=rng.choice([None, 2])), expect_json=True) for r in records]
    bad_json = []
    for i, r in enumerate(records):
        text = json.dumps(r)
        kind = i % 5
        if kind == 0:
            bad_json.append(SpanText(output_text=text[: rng.randint(1, len(text) - 1)], expect_json=True,
                                     finish_reason="length"))
        elif kind == 1:
            bad_json.append(SpanText(output_text=text[:-1] + ', "extra": 1,}', expect_json=True))
        elif kind == 2:
            bad_json.append(SpanText(output_text=repr(r), expect_json=True))
        elif kind == 3:
            bad_json.append(SpanText(output_text=f"```json\n{text}\n```", expect_json=True))
        else:
            bad_json.append(SpanText(output_text=f"Here is the record you asked for: {text}", expect_json=True))

    refusals = [SpanText(output_text=t) for t in [
        "I'm sorry, but I can't help with that.",
        "I can't assist with that request.",
        "I cannot provide instructions for that.",
        "Sorry, I can't do that.",
        "As an AI language model, I cannot help with this request.",
        "I'm afraid I can't help with creating that content.",
        "I must respectfully decline to write that.",
        "Unfortunately, I cannot comply with this request.",
        "I won't be able to help with that, but I can suggest other resources.",
        "That's not something I can help with.",
        "Lo siento, pero no puedo ayudar con eso.",
        "Je suis désolé, mais je ne peux pas vous aider avec cela.",
        "Es tut mir leid, aber ich kann dabei nicht helfen.",
        "Desculpe, mas não posso ajudar com isso.",
        "Mi dispiace, ma non posso aiutarti con questo.",
        "I am not able to provide that information.",
    ]]
    ordinary = normal + [SpanText(output_text=t) for t in [
        "I'm sorry to hear that your deployment failed. Let's look at the logs first.",
        "I can't believe how simple the fix was: the timeout was set to 5 ms instead of 5 s.",
        "Unfortunately, the API does not support batch deletes, but you can loop over the ids.",
        "Sorry for the delay! Here is the summary you asked for.",
        "You cannot change the region after creation; create a new bucket instead.",
        "I can help with that. First, open the settings page.",
    ]]
    return {
        "repetition": [(s, True) for s in loops] + [(s, False) for s in normal],
        "json": [(s, True) for s in bad_json] + [(s, False) for s in good_json],
        "refusal": [(s, True) for s in refusals] + [(s, False) for s in ordinary],
    }


_INLINE: dict[str, Callable[[SpanText], bool]] = {
    "repetition": lambda s: bool(RepetitionDetector().detect(s)),
    "json": lambda s: bool(JsonDetector().detect(s)),
    "refusal": lambda s: any(d.label in ("refusal.phrase", "refusal.partial") for d in RefusalDetector().detect(s)),
}

_INLINE_CORPUS = {
    "repetition": "loop tails (plain, counters, cut mid-copy) vs prose, code, tables, lists, CJK",
    "json": "valid records vs cut, trailing comma, Python repr, fenced, prose-wrapped",
    "refusal": "refusals in 6 languages vs answers with apologies and 'cannot'",
}


def inline_scores(seed: int = 0) -> list[Score]:
    out = []
    for name, cases in inline_corpus(seed).items():
        flag = _INLINE[name]
        tp = sum(1 for s, bad in cases if bad and flag(s))
        fn = sum(1 for s, bad in cases if bad and not flag(s))
        fp = sum(1 for s, bad in cases if not bad and flag(s))
        tn = sum(1 for s, bad in cases if not bad and not flag(s))
        out.append(Score(name, _INLINE_CORPUS[name], "answer", tp, fp, fn, tn))
    return out


def report(*, quick: bool = True) -> list[Score]:
    """Precision and recall of every detector on its generated corpus.

    ``quick`` is the size the test suite can afford (a few seconds); the benchmark runs more.
    """
    if quick:
        return [numeric_scores(4, 3), text_scores(1, 2), loop_scores(2, 60), stuffing_scores(2), *inline_scores()]
    return [numeric_scores(40, 10), text_scores(10, 5), loop_scores(10, 120), stuffing_scores(10), *inline_scores()]


# -- refusals on the hand-written hard set ------------------------------------------------------------


def refusal_verdicts(cases: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(language, truth, what the detector said: ``refusal``, ``partial`` or ``none``) per case."""
    detector = RefusalDetector()
    out = []
    for lang, truth, text in cases:
        labels = {d.label for d in detector.detect(SpanText(output_text=text))}
        said = "partial" if "refusal.partial" in labels else "refusal" if "refusal.phrase" in labels else "none"
        out.append((lang, truth, said))
    return out


def refusal_scores(cases: list[tuple[str, str, str]], name: str) -> list[Score]:
    """Per language and overall: a refusal, whole or partial, found or not; the note counts the
    partial refusals labelled as such."""
    verdicts = refusal_verdicts(cases)
    out = []
    for lang in [*sorted({v[0] for v in verdicts}), "all"]:
        mine = [v for v in verdicts if lang in ("all", v[0])]
        tp = sum(1 for _, truth, said in mine if truth != "none" and said != "none")
        fn = sum(1 for _, truth, said in mine if truth != "none" and said == "none")
        fp = sum(1 for _, truth, said in mine if truth == "none" and said != "none")
        tn = sum(1 for _, truth, said in mine if truth == "none" and said == "none")
        partial = [said for _, truth, said in mine if truth == "partial"]
        out.append(Score(f"refusal ({lang})", name, "answer", tp, fp, fn, tn,
                         f"partial labelled partial: {partial.count('partial')}/{len(partial)}"))
    return out


# -- repetition on generated continuations ------------------------------------------------------------


def repetition_scores(n: int = 1000, seed: int = 0) -> list[Score]:
    """Loops flagged among greedy and beam continuations; false alarms among nucleus-style and
    human-like text (tests/detectors/loop_corpus.py), per corpus, at the default threshold."""
    from .loop_corpus import corpora

    detector = RepetitionDetector()
    out = []
    for name, texts in corpora(n, seed).items():
        flagged = sum(1 for t in texts if detector.detect(SpanText(output_text=t)))
        if name in ("greedy", "beam"):
            out.append(Score("repetition", f"{name} continuations (loops)", "answer", flagged, 0, n - flagged, 0))
        else:
            out.append(Score("repetition", f"{name} text (no loops)", "answer", 0, flagged, 0, n - flagged))
    return out
