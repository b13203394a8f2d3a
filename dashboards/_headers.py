"""The security headers of every response the collector serves (pages, API, OTLP)."""

from __future__ import annotations

# No script may run on these pages, whatever a span's text says: styles are inline, charts are
# inline SVG, forms only submit back here.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}
