"""The pager simulation: realistic multi-tenant LLM traffic, a library of incidents, the alert
evaluator replayed over it minute by minute, and the score (see README.md)."""
