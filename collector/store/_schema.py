"""The store's DDL, kept as ``.sql`` files in ``collector/store/sql`` and applied in name order.

On a ClickHouse cluster the same files are rewritten, not duplicated: every table becomes a
Replicated ``<name>_local`` table created ``ON CLUSTER``, a ``Distributed`` table takes the
original name (so every query, insert and view reads and writes the names it always uses), and
materialized views move to the local tables, firing on the shard where rows land.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources

from ._histogram import histogram_sql
from ._kinds import LLM, kind_sql, openinference_operation_sql, operations_sql
from ._money import money_ddl

_CREATE_TABLE = re.compile(r"^CREATE TABLE IF NOT EXISTS (\w+)", re.MULTILINE)
_CREATE_VIEW = re.compile(r"^CREATE MATERIALIZED VIEW IF NOT EXISTS (\w+) TO (\w+)", re.MULTILINE)
_DROP = re.compile(r"^DROP (VIEW|TABLE) IF EXISTS (\w+)$")
_ENGINE = re.compile(r"ENGINE = (\w*MergeTree)\(([^)]*)\)")
_FROM = re.compile(r"\bFROM (\w+)")
_ALTER = re.compile(r"^ALTER TABLE (\w+) ")
_HISTOGRAM = re.compile(r"\$HISTOGRAM\((\w+)\)")


def statements() -> list[str]:
    """Every DDL statement, in the order it must run. Idempotent (``IF NOT EXISTS``)."""
    folder = resources.files("infersight.collector.store") / "sql"
    out: list[str] = []
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if not path.name.endswith(".sql"):
            continue
        text = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("--")
        ).replace("$KIND_OF_OPERATION", kind_sql("operation")).replace(
            "$OPERATION_OF_OPENINFERENCE_KIND", openinference_operation_sql("SpanAttributes['openinference.span.kind']")
        )
        for name, sql in {"$LLM_OPERATIONS": operations_sql(LLM), **money_ddl()}.items():
            text = text.replace(name, sql)
        text = _HISTOGRAM.sub(lambda m: histogram_sql(m.group(1)), text)
        out.extend(s.strip() for s in text.split(";\n") if s.strip().rstrip(";"))
    return [s.rstrip(";") for s in out]


def fingerprint(ddl: list[str]) -> str:
    """What a store records of the schema it applied: a change to any statement changes it."""
    return hashlib.sha256("\n;\n".join(ddl).encode()).hexdigest()


def cluster_statements(cluster: str, database: str) -> list[str]:
    """The same schema for a ClickHouse cluster named ``cluster``: Replicated local tables,
    Distributed tables under the original names, views on the local tables."""
    if not re.fullmatch(r"\w+", cluster) or not re.fullmatch(r"\w+", database):
        raise ValueError(f"cluster and database must be identifiers; got {cluster!r}, {database!r}")
    on = f"ON CLUSTER {cluster}"
    tables = {m.group(1) for s in statements() if (m := _CREATE_TABLE.match(s))}
    out: list[str] = []
    for statement in statements():
        if (m := _CREATE_TABLE.match(statement)) is not None:
            name = m.group(1)
            local = statement.replace(m.group(0), f"CREATE TABLE IF NOT EXISTS {name}_local {on}", 1)
            # re.sub calls the lambda before the loop moves on, so it sees this iteration's name
            local = _ENGINE.sub(
                lambda e: _replicated(e.group(1), e.group(2), database, name), local, count=1  # noqa: B023
            )
            out.append(local)
            out.append(
                f"CREATE TABLE IF NOT EXISTS {name} {on} AS {name}_local"
                f" ENGINE = Distributed({cluster}, {database}, {name}_local, rand())"
            )
        elif (m := _CREATE_VIEW.match(statement)) is not None:
            view, target = m.group(1), m.group(2)
            head = f"CREATE MATERIALIZED VIEW IF NOT EXISTS {view} {on} TO {target}_local"
            body = statement.replace(m.group(0), head, 1)
            out.append(_FROM.sub(lambda f: f"FROM {f.group(1)}_local" if f.group(1) in tables else f.group(0), body))
        elif (m := _ALTER.match(statement)) is not None:
            rest = statement[m.end():]
            out.append(f"ALTER TABLE {m.group(1)}_local {on} {rest}")
            out.append(f"ALTER TABLE {m.group(1)} {on} {rest}")
        elif (m := _DROP.match(statement)) is not None:
            kind, name = m.group(1), m.group(2)
            out.append(f"DROP {kind} IF EXISTS {name} {on}")
            if kind == "TABLE":
                out.append(f"DROP TABLE IF EXISTS {name}_local {on}")
        else:
            raise ValueError(f"no cluster form for this statement: {statement[:80]!r}")
    return out


def _replicated(engine: str, args: str, database: str, table: str) -> str:
    path = f"'/clickhouse/tables/{{shard}}/{database}/{table}_local', '{{replica}}'"
    return f"ENGINE = Replicated{engine}({path}{', ' + args if args.strip() else ''})"
