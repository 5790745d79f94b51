"""How the driver's JVM is given its logging configuration (docs/spark.md, "Logging")."""

from __future__ import annotations

import os

from streaming.session import LOG4J_FILE, _configure_driver_jvm


def test_the_driver_is_given_the_logging_file_before_the_profile_s_options(tmp_path, monkeypatch):
    (tmp_path / LOG4J_FILE).write_text("rootLogger.level = error\n")
    monkeypatch.setenv("COORDSIM_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    conf = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
    _configure_driver_jvm("local[*]", conf)
    # Last, the profile's options are what run_session recognises in the running application's.
    assert conf["spark.driver.extraJavaOptions"] == \
        f"-Dlog4j2.configurationFile={(tmp_path / LOG4J_FILE).as_uri()} -XX:TieredStopAtLevel=1"
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_a_user_s_logging_file_or_a_conf_folder_without_one_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("COORDSIM_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    conf = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
    _configure_driver_jvm("spark://127.0.0.1:7077", conf)  # no file in the conf folder
    assert conf == {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
    assert "SPARK_LOCAL_IP" not in os.environ  # a cluster's addresses are the user's to choose
    (tmp_path / LOG4J_FILE).write_text("rootLogger.level = error\n")
    own = {"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/spark/log4j2.properties"}
    _configure_driver_jvm("local[2]", own)
    assert own == {"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/spark/log4j2.properties"}
