"""One local[2] SparkSession for the whole test session (a JVM start costs tens of seconds)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    try:
        import pyspark  # noqa: F401
    except ImportError:
        if os.environ.get("KGEVAL_REQUIRE_SERVERS") == "1":
            pytest.fail("pyspark is not installed: pip install -e '.[spark]' (CI must run the Spark tests)")
        pytest.skip("pyspark not installed (the spark extra)")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers import this kgeval
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kgeval tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", "2")
        # Small splits: every test file is read in several splits, so record numbering across
        # splits and partitions is exercised.
        .config("spark.sql.files.maxPartitionBytes", "16k")
        .config("spark.sql.files.openCostInBytes", "4k")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "40")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
