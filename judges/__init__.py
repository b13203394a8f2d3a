"""Sampled LLM-judge scoring: see issue 6."""

__all__: list[str] = []
