"""Run settings against a running Spark application: what a run may change, and what needs a new one."""

from __future__ import annotations

import pytest

from streaming.session import SettingsError, run_session

pytestmark = pytest.mark.spark


def test_sql_settings_apply_to_the_run_only(spark):
    run = run_session(spark, {"spark.sql.shuffle.partitions": 3})
    assert run.conf.get("spark.sql.shuffle.partitions") == "3"
    assert spark.conf.get("spark.sql.shuffle.partitions") != "3"


def test_the_jvm_options_the_application_was_started_with_are_accepted(spark):
    # Spark puts its own options first: the user's are the end of the running value.
    running = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
    run_session(spark, {"spark.driver.extraJavaOptions": running.split(" ")[-1]})


def test_a_startup_setting_the_application_was_not_started_with_is_refused(spark):
    with pytest.raises(SettingsError, match="spark.driver.extraJavaOptions=-Xlog:gc needs a new Spark application"):
        run_session(spark, {"spark.driver.extraJavaOptions": "-Xlog:gc"})
    with pytest.raises(SettingsError, match="spark.master=local\\[1\\] needs a new Spark application"):
        run_session(spark, {"spark.master": "local[1]"})
