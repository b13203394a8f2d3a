"""The :class:`Judge` protocol and its OpenAI-compatible implementation over httpx.

:class:`JudgeClient` posts to ``{base_url}/chat/completions`` (OpenAI, vLLM, Ollama, LiteLLM and
any compatible gateway), asks for a JSON verdict and parses it strictly. Transient failures
(timeouts, connection errors, 408/409/425/429, 5xx) are retried with exponential back-off and
full jitter; logic errors (every other 4xx) and invalid verdicts are not. A
:class:`~._breaker.CircuitBreaker` stops calls to a judge that keeps failing. Every HTTP attempt
is an LLM span traced with the SDK's ``traced_llm`` (route ``infersight.judge``), so the judge's
own latency, tokens and cost show up like any other model's.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import httpx

from infersight import sdk

from ._breaker import CircuitBreaker
from ._errors import CircuitOpen, InvalidVerdict, JudgeRejected, TransientJudgeError
from ._types import JUDGE_ROUTE, JUDGE_TENANT, SCORE_MAX, SCORE_MIN, Verdict

REASON_MAX_CHARS = 500
# Chat templates add a few tokens per message (role, separators) and to prime the reply.
_TEMPLATE_TOKENS_PER_MESSAGE = 16
logger = logging.getLogger("infersight.judges")
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n?(.*?)\n?```\Z", re.DOTALL | re.IGNORECASE)


@runtime_checkable
class Judge(Protocol):
    """Something that scores one rendered rubric prompt.

    Contract: ``judge`` blocks until it has a verdict or has given up, and is safe to call from
    several threads at once. It returns a :class:`Verdict` with a score on the fixed 1-5 scale,
    or raises a :class:`~._errors.JudgeCallError` (``TransientJudgeError`` after its retries,
    ``JudgeRejected``, ``InvalidVerdict``) or :class:`~._errors.CircuitOpen`; never anything else
    on purpose, and never a partial verdict. ``model`` names the judge model: scores are only
    comparable within one.

    A judge that cannot price its calls may say so with ``price_known = False`` (as
    :class:`JudgeClient` does): runners with a dollar cap then refuse it before they start.
    """

    @property
    def model(self) -> str: ...

    def judge(self, messages: Sequence[Mapping[str, str]]) -> Verdict:
        """Score ``messages`` (chat messages with ``role`` and ``content``)."""
        ...

    def close(self) -> None: ...


class _HttpStatusError(Exception):
    """A non-200 answer; ``status_code`` lets the SDK classify it on the judge's span."""

    def __init__(self, status_code: int, detail: str, retry_after_s: float | None) -> None:
        super().__init__(f"judge answered HTTP {status_code}: {detail}")
        self.status_code = status_code
        self.retry_after_s = retry_after_s


def chat_completions_url(base_url: str) -> str:
    """``{base_url}/chat/completions``; a base URL without a path gets ``/v1`` (OpenAI's layout)."""
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"The 'base_url' parameter of JudgeClient must be an http(s) URL; got {base_url!r}.")
    path = url.path.rstrip("/") or "/v1"
    return str(url.copy_with(path=path + "/chat/completions", query=None))


def parse_verdict(content: str) -> tuple[int, str]:
    """``(score, reason)`` from a judge's reply, or :class:`InvalidVerdict`.

    Strict: the reply must be exactly one JSON object ``{"score": <int 1-5>, "reason": "<text>"}``
    (one surrounding Markdown code fence is tolerated, since many models add it even when told
    not to). No JSON is dug out of prose, no extra or duplicate keys, no ``4.0`` or ``"4"`` for 4:
    a judge that answers anything else is failing, and its answer must not become a score.
    """
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except (ValueError, RecursionError) as exc:
        raise InvalidVerdict(f"verdict is not a JSON object: {exc}; got {_excerpt(content)}") from None
    if not isinstance(document, dict):
        raise InvalidVerdict(f"verdict must be a JSON object; got {_excerpt(content)}")
    if set(document) != {"score", "reason"}:
        raise InvalidVerdict(f"verdict must have exactly the keys 'score' and 'reason'; got {sorted(document)}")
    score, reason = document["score"], document["reason"]
    if not isinstance(score, int) or isinstance(score, bool) or not SCORE_MIN <= score <= SCORE_MAX:
        raise InvalidVerdict(f"verdict 'score' must be an integer from {SCORE_MIN} to {SCORE_MAX}; got {score!r}")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidVerdict(f"verdict 'reason' must be a non-empty string; got {reason!r}")
    reason = " ".join(reason.split())
    if len(reason) > REASON_MAX_CHARS:
        reason = reason[: REASON_MAX_CHARS - 1] + "…"
    return score, reason


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError(f"duplicate keys {sorted(k for k in set(keys) if keys.count(k) > 1)}")
    return dict(pairs)


def _excerpt(text: str, limit: int = 120) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _retry_after_s(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: the exponential back-off is a fine substitute
    return seconds if seconds >= 0 else None


class JudgeClient:
    """A judge behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        base_url: e.g. ``https://api.openai.com/v1`` or ``http://localhost:11434/v1``; a URL with
            no path gets ``/v1``.
        model: the judge model, sent in each request and recorded with every score.
        api_key: sent as ``Authorization: Bearer``; none for local servers.
        provider: ``gen_ai.provider.name`` on the judge's spans and the price lookup's provider.
        timeout_s: per-request timeout (connect, read, write each).
        max_retries: retries of a transient failure (so up to ``max_retries + 1`` requests).
        backoff_base_s, backoff_max_s: retry ``n`` (0-based) waits a uniformly random time in
            ``[0, min(backoff_max_s, backoff_base_s * 2**n)]`` ("full jitter"), or the server's
            ``Retry-After`` when it sends one (capped at ``backoff_max_s``).
        breaker: stops calls after repeated failures; one with default settings if omitted.
        prices: ``{"input_mtok": ..., "output_mtok": ...}`` USD per million tokens, for judge
            models genai-prices does not know (self-hosted); otherwise genai-prices is asked and
            an unknown model's cost is ``None``, never a guess (``price_known`` is then False,
            and a warning is logged once at the first such answer). An answer without token
            usage is costed at an upper bound, flagged ``cost_estimated`` and warned about once:
            every byte of the prompt's text a token, plus 16 per message and 16 for the reply's
            template (a token of a byte-level BPE vocabulary, OpenAI's or Llama's, covers at
            least one byte), and ``max_tokens`` output tokens.
        json_mode: send ``response_format: {"type": "json_object"}``; turn off for servers that
            reject the parameter.
        temperature, max_tokens: sent with every request.
        transport, sleep, rng: for tests.

    ``judge`` is thread-safe (one pooled ``httpx.Client``) and blocking.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        provider: str = "openai",
        timeout_s: float = 30.0,
        max_retries: int = 3,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
        breaker: CircuitBreaker | None = None,
        prices: Mapping[str, float] | None = None,
        json_mode: bool = True,
        temperature: float = 0.0,
        max_tokens: int = 256,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not model:
            raise ValueError("The 'model' parameter of JudgeClient must be a model name; got ''.")
        if not timeout_s > 0:
            raise ValueError(f"The 'timeout_s' parameter of JudgeClient must be positive; got {timeout_s!r}.")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(
                f"The 'max_retries' parameter of JudgeClient must be an integer >= 0; got {max_retries!r}."
            )
        if not (backoff_base_s >= 0 and backoff_max_s >= 0):
            raise ValueError("The 'backoff_base_s' and 'backoff_max_s' parameters of JudgeClient must be >= 0.")
        self.url = chat_completions_url(base_url)
        self._model = model
        self.provider = provider
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.breaker = breaker if breaker is not None else CircuitBreaker()
        self.json_mode = json_mode
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._price = _pricer(provider, model, prices)
        self.price_known = prices is not None or known_price(provider, model)
        self._warned: set[str] = set()
        self._warn_lock = threading.Lock()
        self._sleep = sleep
        self._rng = rng or random.Random()
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)
        # Decorated per instance: the provider is this client's setting, not a module constant.
        self._traced_post = sdk.traced_llm(provider=provider)(self._post)

    @property
    def model(self) -> str:
        return self._model

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def judge(self, messages: Sequence[Mapping[str, str]]) -> Verdict:
        """Score ``messages``; see :class:`Judge` for the contract."""
        if not self.breaker.allow():
            raise CircuitOpen(
                f"the judge {self._model} failed {self.breaker.failure_threshold} times in a row; "
                f"not calling it for another {self.breaker.retry_in_s():.0f} s"
            )
        started = time.perf_counter()
        try:
            verdict = self._judge(list(messages), started)
        except BaseException:
            # Whatever ended the call (even KeyboardInterrupt) must end a half-open trial too,
            # or the breaker would wait for a result that never comes.
            self.breaker.record_failure()
            raise
        self.breaker.record_success()
        return verdict

    def _judge(self, messages: list[Mapping[str, str]], started: float) -> Verdict:
        attempt = 0
        while True:
            try:
                with sdk.tenant(JUDGE_TENANT, route=JUDGE_ROUTE):
                    # Traced when the host process set the SDK up (an app judging its own
                    # answers); the collector does not, and must not warn about it.
                    post = self._traced_post if sdk.initialised() else self._post
                    body = post(model=self._model, messages=messages, attempt=attempt)
                break
            except _HttpStatusError as exc:
                transient = exc.status_code >= 500 or exc.status_code in _TRANSIENT_STATUS
                if not transient:
                    raise JudgeRejected(str(exc), attempts=attempt + 1, status_code=exc.status_code) from exc
                error: Exception = exc
                retry_after = exc.retry_after_s
            except httpx.TransportError as exc:  # timeouts, refused or reset connections: it may come back
                error, retry_after = exc, None
            if attempt >= self.max_retries:
                raise TransientJudgeError(
                    f"judge {self._model} still failing after {attempt + 1} attempts: {type(error).__name__}: {error}",
                    attempts=attempt + 1, status_code=getattr(error, "status_code", None),
                ) from error
            self._sleep(self._backoff_s(attempt, retry_after))
            attempt += 1
        return self._verdict(body, messages, attempt + 1, time.perf_counter() - started)

    def _backoff_s(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return min(retry_after_s, self.backoff_max_s)
        return self._rng.uniform(0.0, min(self.backoff_max_s, self.backoff_base_s * 2**attempt))

    def _post(self, *, model: str, messages: list[Mapping[str, str]], attempt: int) -> Any:
        """One HTTP attempt (the traced unit): the 200 body as JSON, or as text when it is not JSON."""
        if attempt:
            sdk.mark_retry(attempt, reason="transient")
        request: dict[str, Any] = {
            "model": model,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.json_mode:
            request["response_format"] = {"type": "json_object"}
        response = self._http.post(self.url, json=request)
        if response.status_code != 200:
            raise _HttpStatusError(response.status_code, _error_detail(response), _retry_after_s(response))
        try:
            return response.json()
        except ValueError:
            # Returned, not raised: the HTTP call worked; the verdict check below fails it.
            return response.text

    def _verdict(self, body: Any, messages: list[Mapping[str, str]], attempts: int, latency_s: float) -> Verdict:
        usage = body.get("usage") if isinstance(body, dict) else None
        if not isinstance(usage, dict):
            usage = {}
        reported_input, reported_output = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        input_tokens, output_tokens = reported_input or 0, reported_output or 0
        estimated = reported_input is None or reported_output is None
        if estimated:
            # Unknown usage must not count as free against a dollar cap: cost what it can have cost at most.
            cost = self._price(_prompt_token_bound(messages) if reported_input is None else reported_input,
                               self.max_tokens if reported_output is None else reported_output)
        else:
            cost = self._price(input_tokens, output_tokens)
        self._warn_uncosted(estimated, cost)
        try:
            if not isinstance(body, dict):
                raise InvalidVerdict(
                    f"judge answered HTTP 200 with a body that is not a JSON object: {_excerpt(str(body))}"
                )
            score, reason = parse_verdict(_content(body))
        except InvalidVerdict as exc:
            raise InvalidVerdict(str(exc), attempts=attempts, input_tokens=input_tokens,
                                 output_tokens=output_tokens, cost_usd=cost,
                                 cost_estimated=estimated and cost is not None) from None
        return Verdict(
            score=score, reason=reason, judge_model=self._model, latency_s=latency_s, attempts=attempts,
            input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost,
            cost_estimated=estimated and cost is not None,
        )

    def _warn_uncosted(self, estimated: bool, cost: float | None) -> None:
        """Log once per client per kind: a judge's spend that cannot be known exactly is news."""
        kind = "unpriced" if cost is None else "no_usage" if estimated else ""
        if not kind:
            return
        with self._warn_lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        if kind == "unpriced":
            logger.warning(
                "judge model %r (provider %r) has no known price: its calls are recorded with an unknown cost, "
                "and a daily dollar cap cannot be checked; give its price (--price-input-mtok and "
                "--price-output-mtok, or JudgeClient(prices=...)). Logged once.", self._model, self.provider,
            )
        else:
            logger.warning(
                "judge %r at %s answered without token usage: such calls are costed at an upper bound "
                "(every prompt byte a token, and max_tokens=%d output tokens) and flagged as estimates. "
                "Logged once.", self._model, self.url, self.max_tokens,
            )


def _content(body: dict[str, Any]) -> str:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise InvalidVerdict("judge response has no 'choices'")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise InvalidVerdict("judge response has no text in choices[0].message.content")
    return content


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _prompt_token_bound(messages: Sequence[Mapping[str, str]]) -> int:
    text_bytes = sum(len(str(m.get("content", "")).encode()) for m in messages)
    return text_bytes + _TEMPLATE_TOKENS_PER_MESSAGE * (len(messages) + 1)


def known_price(provider: str, model: str) -> bool:
    """Whether genai-prices (or the SDK's price overrides) knows what ``model`` costs."""
    return sdk.cost_usd(model, input_tokens=1, output_tokens=1, provider=provider) is not None


def _error_detail(response: httpx.Response) -> str:
    try:
        message = response.json().get("error", {}).get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else _excerpt(response.text)


def _pricer(provider: str, model: str, prices: Mapping[str, float] | None) -> Callable[[int, int], float | None]:
    """What one judge call costs, from ``prices`` (USD per million tokens) or else from the SDK's
    genai-prices lookup, the same prices the app's own spans are costed with."""
    if prices is None:
        def priced(input_tokens: int, output_tokens: int) -> float | None:
            found = sdk.cost_usd(model, input_tokens=input_tokens, output_tokens=output_tokens, provider=provider)
            return None if found is None else found[0]

        return priced
    try:
        input_mtok, output_mtok = float(prices["input_mtok"]), float(prices["output_mtok"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            "The 'prices' parameter of JudgeClient must be {'input_mtok': float, 'output_mtok': float}; "
            f"got {prices!r}."
        ) from exc
    return lambda input_tokens, output_tokens: (input_tokens * input_mtok + output_tokens * output_mtok) / 1e6
