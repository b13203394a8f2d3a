"""Soft-failure detectors (repetition loops, broken JSON, refusals, drift, cost loops): see issue 5."""

__all__: list[str] = []
