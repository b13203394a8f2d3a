"""The public face of each subpackage is deliberate: this fails when it drifts."""

from __future__ import annotations

import pytest

from infersight import collector, dashboards, demo, detectors, sdk
from infersight.collector import alerts, ingest, spool, store, web

EXPECTED = {
    sdk: [
        "classify_error", "cost_usd", "current_trace_id", "failure_count", "feedback", "force_flush", "init",
        "initialised", "mark_cache_hit",
        "mark_fallback", "mark_retry", "mark_started", "redact_builtin", "request", "shutdown", "span",
        "tenant", "traced_llm", "traced_rerank", "traced_retrieval", "watch_queue",
    ],
    collector: [
        "BadRequest", "ChdbStore", "DataDirLocked", "InfersightError", "PayloadTooLarge",
        "Settings", "SpoolError", "SpoolFull", "Store", "StoreError", "Unauthorized",
        "UnsupportedMediaType", "create_app", "encode_rows",
    ],
    store: [
        "ChdbStore", "ClickHouseStore", "DataDirLocked", "FEEDBACK_KINDS", "JUDGE_PASS_SCORE", "KINDS", "LEASE_TTL_S",
        "LLM", "Lease", "PENDING_DEAD_LETTERS", "SESSION_COLUMNS",
        "Store", "StoreError", "TRACE_SORTS", "TRACE_SPAN_COLUMNS", "TraceSearch", "UNPRICED", "bucket_value",
        "call_detections", "call_figures", "check_choice", "check_text",
        "clickhouse_time",
        "cluster_statements", "complete_calls", "day_or_yesterday", "dead_letters", "detections", "encode_rows",
        "event_finish_reasons", "feedback_judge_agreement", "feedback_rows", "feedback_series",
        "fill_finish_reasons", "find_sessions", "find_traces", "find_users",
        "held_spans",
        "histogram_sql", "holder_name", "insert_error", "insert_feedback", "join_events",
        "kind_of", "merge_histograms", "negative_feedback_traces", "operation_of", "operations_of", "percentiles",
        "queues", "recent_spans", "session_json", "session_turns",
        "shown", "since_ns", "since_to_unix_ns", "span_finish_reason", "span_finish_reasons",
        "spend_of", "spend_sql", "statements",
        "summary", "trace_feedback", "usd", "usd_text",
    ],
    alerts: [
        "Ack", "Alert", "AlertJob", "AlertmanagerNotifier", "BREACH", "BUCKETS", "BUCKET_S", "CLEAR", "CostRule",
        "Digest", "ErrorRateRule", "Evaluation", "Evaluator", "EvaluatorConfig", "HOLD", "Matcher", "Notifier",
        "NotifierError", "QueueRule", "ServiceMemory", "ServiceWindow", "Silence", "SlackNotifier", "Verdict",
        "WebhookNotifier", "alerts_cli", "build_digest", "channel_options", "history", "parse_matcher", "router",
        "silencing",
    ],
    ingest: ["Decoded", "Decoder", "RETRY_AFTER_S", "decode_request", "default_workers", "router"],
    spool: [
        "Batch", "Entry", "MAX_DAYS", "ReplayOutcome", "Spool", "SpoolDepth", "SpoolWriter", "pending_dead_letters",
        "replay_dead_letters",
    ],
    web: [
        "AdminPageProjectDep", "AdminProjectDep", "Authenticator", "AuthenticatorDep", "CollectorAnswer",
        "CollectorClient", "CollectorUnreachable", "ErrorPages", "IngestProjectDep", "KEYS_FILE", "KeyBook",
        "KeyInfo", "NotCrossSiteDep", "PageNotAnalysedDep", "PageProjectDep", "PageRoleDep", "ProjectKeys", "ROLES",
        "ReadProjectDep", "Role", "SESSION_COOKIE", "SESSION_MAX_AGE_S", "SameOriginDep", "SecurityHeaders",
        "StoreDep", "StoreKeys", "UnreadBodyDrain", "api_router", "collector_url", "error_handlers",
        "feedback_router",
        "key_project", "metrics_router", "open_key_book", "record_collector_url", "route_role",
        "store_or_collector",
    ],
    demo: ["BackfillError", "FakeJudge", "FakeLLM", "Feedback", "Incident", "SEARCH_API", "SERVICES", "SUPPORT_BOT",
           "Service", "WeekOfTraffic", "past_incident", "post_feedback", "post_week", "requests_per_hour",
           "run_traffic", "start_fake_llm"],
    dashboards: ["SECURITY_HEADERS", "error_page", "report_cli", "router", "store_unavailable"],
    detectors: [
        "BUILTIN_DETECTORS", "ChatMessage", "ContextStuffingDetector", "CostLoopDetector", "Detection",
        "DriftReport", "FINISH_REASON_KINDS", "FINISH_REASON_SPELLINGS",
        "FeatureShift", "InlineDetector", "JsonDetector", "LLMCall", "MessagePart", "NotFittedError",
        "NumericDriftDetector", "RefusalDetector", "RepetitionDetector", "SchemaCheck", "SpanFinding", "SpanText",
        "TermShift", "TextDriftDetector", "TextDriftReport", "TruncationDetector", "WindowedRun",
        "WindowedRunner", "finish_reason_kind",
        "inline_failure_count", "messages_text", "parse_messages", "prompt_hash", "row_time_day",
        "row_time_ns", "row_time_text", "run_inline", "schema_check", "usd_text",
    ],
}


@pytest.mark.parametrize("module", list(EXPECTED), ids=lambda m: m.__name__)
def test_all_is_sorted_and_exact(module):
    assert module.__all__ == sorted(module.__all__)
    assert module.__all__ == EXPECTED[module]
    for name in module.__all__:
        assert hasattr(module, name)
