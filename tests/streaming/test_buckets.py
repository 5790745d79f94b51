"""Bucket keys: Spark's hash of a label, computed in Python, and labels that spread buckets evenly."""

from __future__ import annotations

from collections import Counter

import pytest

from streaming.buckets import bucket_labels, partition_of, spark_string_hash

TEXTS = ["", "0", "17", "255", "abc", "abcd", "abcde", "0.13", "group-000042", "é", "grüße", "日本語のキー"]


@pytest.mark.spark
def test_the_hash_is_sparks(spark):
    from pyspark.sql import functions as F

    rows = spark.createDataFrame([(t,) for t in TEXTS], "text string").select("text", F.hash("text").alias("h"))
    assert {r["text"]: r["h"] for r in rows.collect()} == {t: spark_string_hash(t) for t in TEXTS}


@pytest.mark.parametrize("buckets, partitions", [(64, 2), (256, 2), (10, 4), (3, 8), (1, 1)])
def test_labels_are_distinct_and_spread_buckets_evenly(buckets, partitions):
    labels = bucket_labels(buckets, partitions)
    assert len(set(labels)) == buckets
    counts = Counter(partition_of(label, partitions) for label in labels)
    assert max(counts.values()) - min(counts.values()) <= 1 and len(counts) == min(buckets, partitions)


def test_plain_numbers_would_not_spread_evenly():
    # Why the labels exist: "0".."63" put 42 buckets in one of 2 partitions.
    assert Counter(partition_of(str(b), 2) for b in range(64)) == Counter({1: 42, 0: 22})
