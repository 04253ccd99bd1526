"""``local_frame`` gives what ``spark.createDataFrame`` gives for the same rows and schema, as a relation the JVM
scans itself (no Python RDD), and refuses what it cannot give the same way."""

from __future__ import annotations

import datetime

import pytest
from pyspark.sql import SparkSession

from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.schemas import ACL_SCHEMA

UTC = datetime.UTC
MIXED = (
    "name string, count long, small int, ratio double, ok boolean, day date, at timestamp, "
    "ids array<string>, maybe string"
)
ROWS = [
    ("a", 1, 2, 0.5, True, datetime.date(2026, 11, 1), datetime.datetime(2026, 11, 1, 12, 0, tzinfo=UTC),
     ["x", "y"], None),
    ("b", -(2**40), -3, -1.25, False, datetime.date(1999, 12, 31),
     datetime.datetime(2026, 11, 1, 13, 30, 15, 123456, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
     [], "z"),
    ("", 0, 0, 0.0, None, None, None, None, None),
]  # fmt: skip


def test_the_same_rows_and_schema_as_create_data_frame(spark: SparkSession) -> None:
    got = local_frame(spark, ROWS, MIXED)
    want = spark.createDataFrame(ROWS, MIXED)
    assert got.schema == want.schema
    assert sorted(got.collect()) == sorted(want.collect())
    plan = got._jdf.queryExecution().optimizedPlan().toString()
    assert "LocalRelation" in plan and "LogicalRDD" not in plan


def test_a_struct_schema_keeps_its_nullability(spark: SparkSession) -> None:
    rows = [("acl-1", "TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")]
    got = local_frame(spark, rows, ACL_SCHEMA)
    assert got.schema == spark.createDataFrame(rows, ACL_SCHEMA).schema == ACL_SCHEMA
    assert got.collect() == spark.createDataFrame(rows, ACL_SCHEMA).collect()
    assert local_frame(spark, [], ACL_SCHEMA).count() == 0


@pytest.mark.parametrize(
    ("rows", "schema", "message"),
    [
        ([(None,)], "acl_id string", None),  # nullable: accepted
        ([("a",)], "a string, b string", "a row of 1 values for 2 columns"),
        ([(datetime.datetime(2026, 11, 1),)], "at timestamp", "a timestamp without a time zone"),
        ([({"k": 1},)], "m map<string, int>", "column m is map<string,int>"),
    ],
)
def test_what_it_refuses(spark: SparkSession, rows: list[tuple[object, ...]], schema: str, message: str | None) -> None:
    if message is None:
        assert local_frame(spark, rows, schema).collect()[0][0] is None
        return
    with pytest.raises(ValueError, match=message):
        local_frame(spark, rows, schema)


def test_a_null_in_a_column_that_is_not_nullable_is_refused(spark: SparkSession) -> None:
    rows = [(None, "TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")]
    with pytest.raises(ValueError, match="a null in column acl_id"):
        local_frame(spark, rows, ACL_SCHEMA)
