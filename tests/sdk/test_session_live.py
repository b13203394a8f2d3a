"""A chat app's turns, sent with ``request(session_id=...)`` over OTLP to a collector on a real
socket, come back from ``/api/v1/sessions`` as one conversation, turn by turn, with their text."""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from infersight import sdk
from tests import http
from tests.conftest import wait_for


def test_requests_with_a_session_id_are_the_turns_of_one_session(collector):
    sdk.init(service_name="chat", endpoint=collector.url,
             tracer_provider=TracerProvider(resource=Resource.create({"service.name": "chat"})))
    try:
        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def answer(messages: list[dict[str, str]]):
            question = messages[-1]["content"]
            return {"model": "gpt-4o-mini", "usage": {"prompt_tokens": 10, "completion_tokens": 5},
                    "choices": [{"message": {"role": "assistant", "content": f"re: {question}"},
                                 "finish_reason": "stop"}]}

        history: list[dict[str, str]] = []
        for question in ("hello", "where is my invoice?", "thanks"):
            history.append({"role": "user", "content": question})
            with sdk.request("acme", route="chat", user_id="u-1", session_id="conv-7"):
                history.append({"role": "assistant", "content": answer(messages=list(history))["choices"][0]
                                ["message"]["content"]})
        with sdk.request("acme", route="chat", user_id="u-1"):  # not a turn of any session
            answer(messages=[{"role": "user", "content": "alone"}])
        assert sdk.force_flush(10_000)
    finally:
        sdk.shutdown()

    def listed():
        body = http.get(f"{collector.url}/api/v1/sessions", params={"since": "1h"}).json()
        return body if body["sessions"] and body["sessions"][0]["turns"] == 3 else None

    body = wait_for(listed)
    assert body, "the session's three turns did not arrive"
    (session,) = body["sessions"]
    assert (session["session_id"], session["llm_calls"], session["tenants"], session["users"]) == (
        "conv-7", 3, ["acme"], ["u-1"])
    turns = http.get(f"{collector.url}/api/v1/sessions/conv-7", params={"since": "1h"}).json()["conversation"]
    assert [(t["input_text"], t["output_text"]) for t in turns] == [
        ("hello", "re: hello"), ("where is my invoice?", "re: where is my invoice?"), ("thanks", "re: thanks")]
    users = http.get(f"{collector.url}/api/v1/users", params={"since": "1h"}).json()["users"]
    assert [(u["tenant"], u["user_id"], u["llm_calls"], u["sessions"]) for u in users] == [("acme", "u-1", 4, 1)]
