"""A ClickHouse HTTP interface in front of chDB, for testing the clickhouse-connect backend.

No ClickHouse server package can be installed on this machine, so the tests point
clickhouse-connect at this endpoint, which executes every query in chDB: the real engine, the
real SQL, the real data formats; only the HTTP framing is ours. Run as a process of its own
(chDB allows one data path per process):

    python -m tests.collector.clickhouse_http --data-dir DIR --port PORT
"""

from __future__ import annotations

import argparse
import gzip
import re
import threading
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

_FORMAT = re.compile(r"\s+FORMAT\s+(\w+)\s*;?\s*$", re.IGNORECASE)
_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+(.+?)\s+FORMAT\s+(\w+)\s*$", re.IGNORECASE | re.DOTALL)
_CODE = re.compile(r"Code: (\d+)")
_APPLIED_SETTINGS = frozenset({"insert_deduplication_token", "deduplicate_blocks_in_dependent_materialized_views"})
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.-]*$")
_ZONE = re.compile(r"^[A-Za-z0-9_/+-]*$")
# A server's http_max_field_value_size (its default): the longest value of a query parameter, in
# the URL or in a form.
MAX_PARAMETER_BYTES = 131072


def make_handler(session: Any, lock: threading.Lock, log: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The headers and the body go out in two writes; with Nagle's algorithm on a kept-alive
        # connection the body waited for the client's delayed ACK: 40 ms a query, whatever it was.
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._handle(b"")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            self._handle(body)

        def _handle(self, body: bytes) -> None:
            url = urlparse(self.path)
            if url.path == "/ping":
                return self._send(200, b"Ok.\n")
            args = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            content_type = self.headers.get("content-type") or ""
            if content_type.startswith("multipart/form-data"):
                # clickhouse-connect sends the query and its parameters as form fields once the
                # parameters pass 4 KB (a collector's repeat check of 512 spans does), as a
                # ClickHouse server accepts them.
                args.update(_form_fields(content_type, body))
                body = b""
            query = args.pop("query", None)
            data = b""
            if query is None:
                query, data = body.decode(), b""
            else:
                data = body
            params = {k[len("param_"):]: v for k, v in args.items() if k.startswith("param_")}
            too_long = [name for name, value in params.items() if len(value.encode()) > MAX_PARAMETER_BYTES]
            if too_long:
                message = (f"Code: 1001. DB::Exception: Field value of parameter {too_long[0]} is too long "
                           f"(more than http_max_field_value_size = {MAX_PARAMETER_BYTES})")
                return self._send(400, message.encode(), exception_code="1001")
            # Only the settings that change what a statement does are applied; the client's
            # transport settings (compression, progress headers, ...) mean nothing here.
            settings = {k: v for k, v in args.items() if k in _APPLIED_SETTINGS}
            log.append(query.strip().split("\n")[0][:120])
            zone = args.get("session_timezone", "")
            try:
                with lock:
                    if not _ZONE.match(zone):
                        raise ValueError(f"Code: 36. DB::Exception: Invalid time zone: {zone}")
                    # A setting of this request only ('': the server's own zone, which the tests
                    # make another than UTC): one session serves every request here.
                    session.query(f"SET session_timezone = '{zone}'")
                    if args.get("database"):
                        session.query(f"USE {args['database']}")
                    insert = _INSERT.match(query)
                    if insert and data:
                        result = self._insert(insert.group(1), insert.group(2), data, settings)
                        return self._send(200, result)
                    fmt = args.get("default_format", "TabSeparated")
                    found = _FORMAT.search(query)
                    if found:
                        fmt, query = found.group(1), query[: found.start()]
                    result = session.query(query, fmt, params=params)
                    return self._send(200, result.bytes(), fmt)
            except Exception as exc:  # noqa: BLE001 - a ClickHouse error travels back as ClickHouse sends it
                message = str(exc)
                code = _CODE.search(message)
                return self._send(500, message.encode(), exception_code=code.group(1) if code else "1000")

        def _insert(self, table: str, fmt: str, data: bytes, settings: dict[str, str]) -> bytes:
            statement = f"INSERT INTO {table}"
            if any(not _SAFE_VALUE.match(v) for v in settings.values()):
                raise ValueError("Code: 115. DB::Exception: setting values must be plain tokens here")
            if settings:
                statement += " SETTINGS " + ", ".join(f"{k} = '{v}'" for k, v in settings.items())
            # A query, not chDB's send_insert: a server reports every failed insert, and
            # send_insert does not raise what fails at commit (too many partitions).
            session.query(f"{statement} FORMAT {fmt}\n".encode() + data)
            return b""

        def _send(self, status: int, payload: bytes, fmt: str | None = None, exception_code: str | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("X-ClickHouse-Timezone", "UTC")
            self.send_header("X-ClickHouse-Server-Display-Name", "chdb-http")
            self.send_header("X-ClickHouse-Summary", '{"read_rows":"0","written_rows":"0"}')
            if fmt:
                self.send_header("X-ClickHouse-Format", fmt)
            if exception_code:
                self.send_header("X-ClickHouse-Exception-Code", exception_code)
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def _form_fields(content_type: str, body: bytes) -> dict[str, str]:
    message = BytesParser(policy=HTTP).parsebytes(f"content-type: {content_type}\r\n\r\n".encode() + body)
    return {part.get_param("name", header="content-disposition"): part.get_content()
            for part in message.iter_parts()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    from chdb import session

    chdb_session = session.Session(args.data_dir)
    log: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(chdb_session, threading.Lock(), log))
    server.serve_forever()


if __name__ == "__main__":
    main()
