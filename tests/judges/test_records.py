"""Array parameters reach ClickHouse intact, whatever the strings hold."""

from __future__ import annotations

from infersight.judges._records import array_param


def test_array_parameters_round_trip_through_the_store(judge_store):
    values = ["plain", "it's", "back\\slash", "a]b,c", "", "ünï©ødé", "x' OR '1'='1"]
    (row,) = judge_store.query("SELECT {a:Array(String)} AS a, length({a:Array(String)}) AS n",
                               {"a": array_param(values)})
    assert row["a"] == values
    assert row["n"] == len(values)
    assert judge_store.query("SELECT length({a:Array(String)}) AS n", {"a": array_param([])}) == [{"n": 0}]
