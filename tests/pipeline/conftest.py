"""One local SparkSession for the whole test run (starting Spark costs seconds; a session per test would
dominate the suite)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from ksteward.pipeline.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session(
        "local[2]",
        "ksteward-tests",
        **{"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", "spark.driver.memory": "2g"},
    )
    yield session
    session.stop()
