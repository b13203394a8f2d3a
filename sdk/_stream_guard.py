"""The opt-in stream guard: stop consuming a stream that has fallen into a repetition loop.

Every 16 content chunks it runs the repetition detector's loop rule on the tail of the text
so far. A looping model keeps generating (and billing) until max_tokens; ending the stream
early closes the connection, so the provider stops too. Costs roughly one detector run per 16
chunks (a fraction of a millisecond on a 2 KB tail); off by default.
"""

from __future__ import annotations

from collections.abc import Callable

CHECK_EVERY_CHUNKS = 16
_TAIL_CHARS = 2400


def loop_checker() -> Callable[[list[str]], str | None]:
    """A function from the text chunks so far to the repeating unit, or ``None``."""
    from infersight.detectors import RepetitionDetector, SpanText

    detector = RepetitionDetector()

    def check(chunks: list[str]) -> str | None:
        tail: list[str] = []
        size = 0
        for chunk in reversed(chunks):  # only the tail is read: join as little as possible
            tail.append(chunk)
            size += len(chunk)
            if size >= _TAIL_CHARS:
                break
        found = detector.detect(SpanText(output_text="".join(reversed(tail))))
        loop = next((d for d in found if d.label == "repetition.loop"), None)
        return loop.evidence if loop is not None else None

    return check
