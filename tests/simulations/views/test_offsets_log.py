"""`coordsim offsets` (simulations.views.offsets_log) on the tiny trace, against lines written out by hand from
what kafka-console-consumer.sh prints with Kafka 4.x's OffsetsMessageFormatter and
GroupMetadataMessageFormatter (each printing only its own record types, OffsetMessageFormatterTest and
GroupMetadataMessageFormatterTest), and with the 0.10.1-2.0 text formatter (`--format legacy`)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from simulations.cli import main
from simulations.engines import run_local
from simulations.views import offsets_log
from simulations.views.offsets_log import FormatterError
from tableio.coordinator_settings import load_config
from tableio.inputs import read_events
from tableio.parquet import write_tables

from .runs import TINY

INVOICES, ORDERS = "5APCOINjSA-B8nK9XQ6RvQ", "ofnGqrYJQ32oP1afX_OMFg"  # the ids coordsim derives for the topics


def commit(group, topic, partition, value) -> str:
    return (f'{{"key":{{"type":1,"data":{{"group":"{group}","topic":"{topic}","partition":{partition}}}}},'
            f'"value":{value}}}')


def v4(offset, metadata, commit_ts, topic_id) -> str:
    return (f'{{"version":4,"data":{{"offset":{offset},"leaderEpoch":-1,"metadata":"{metadata}",'
            f'"commitTimestamp":{commit_ts},"topicId":"{topic_id}"}}}}')


def test_offsets_message_formatter_prints_the_commits_and_tombstones_in_write_order(tiny_run):
    assert list(offsets_log(tiny_run)) == [
        commit("exporter", "invoices", 0, '{"version":1,"data":{"offset":42,"metadata":"batch-17",'
                                          '"commitTimestamp":1772442001000,"expireTimestamp":1772442061000}}'),
        commit("exporter", "invoices", 1, v4(7, "", 1772442002000, INVOICES)),
        commit("orders", "orders", 0, v4(100, "", 1772442007000, ORDERS)),
        commit("orders", "orders", 1, v4(200, "batch-7", 1772442007000, ORDERS)),
        commit("orders", "orders", 2, v4(300, "", 1772442007100, ORDERS)),
        commit("orders", "orders", 3, v4(400, "", 1772442009000, ORDERS)),
        commit("exporter", "invoices", 0, "null"),
    ]
    assert len(list(offsets_log(tiny_run, "exporter"))) == 3


def test_group_metadata_message_formatter_prints_the_group_metadata_records(tiny_run):
    lines = [json.loads(line) for line in offsets_log(tiny_run, formatter="GroupMetadataMessageFormatter")]
    assert {line["key"]["type"] for line in lines} == {2}
    assert [(line["value"]["data"]["generation"], line["value"]["data"]["protocol"],
             [m["groupInstanceId"] for m in line["value"]["data"]["members"]]) for line in lines] == [
        (0, None, []), (1, "range", ["c2-static", None]), (2, "range", [None]), (3, None, [])]
    first = ('{"key":{"type":2,"data":{"group":"orders"}},"value":{"version":3,"data":{"protocolType":"",'
             '"generation":0,"protocol":null,"leader":null,"currentStateTimestamp":1772442000000,"members":[]}}}')
    assert next(offsets_log(tiny_run, formatter="org.apache.kafka.tools.consumer.GroupMetadataMessageFormatter")) \
        == first


def test_legacy_format_prints_the_text_of_kafka_0_10_to_2_0(tiny_run):
    assert list(offsets_log(tiny_run, legacy=True)) == [
        "[exporter,invoices,0]::[OffsetMetadata[42,batch-17],CommitTime 1772442001000,ExpirationTime 1772442061000]",
        "[exporter,invoices,1]::[OffsetMetadata[7,NO_METADATA],CommitTime 1772442002000,ExpirationTime _]",
        "[orders,orders,0]::[OffsetMetadata[100,NO_METADATA],CommitTime 1772442007000,ExpirationTime _]",
        "[orders,orders,1]::[OffsetMetadata[200,batch-7],CommitTime 1772442007000,ExpirationTime _]",
        "[orders,orders,2]::[OffsetMetadata[300,NO_METADATA],CommitTime 1772442007100,ExpirationTime _]",
        "[orders,orders,3]::[OffsetMetadata[400,NO_METADATA],CommitTime 1772442009000,ExpirationTime _]",
        "[exporter,invoices,0]::NULL",
    ]


def test_a_kafka_4_0_run_prints_its_commits_at_version_3(tmp_path):
    inputs = read_events([TINY])
    write_tables(tmp_path, run_local(inputs.events, load_config(overrides=["coordsim.kafka.version=4.0"])).tables)
    lines = list(offsets_log(tmp_path))
    assert lines[2] == commit("orders", "orders", 0, '{"version":3,"data":{"offset":100,"leaderEpoch":-1,'
                                                     '"metadata":"","commitTimestamp":1772442007000}}')
    assert [json.loads(line)["value"]["version"] for line in lines[:-1]] == [1, 3, 3, 3, 3, 3]


@pytest.mark.parametrize("args, message", [
    (["--formatter", "TransactionLogMessageFormatter"], "--formatter TransactionLogMessageFormatter: not one"),
    (["--formatter", "GroupMetadataMessageFormatter", "--format", "legacy"], "--format legacy: a text format of"),
])
def test_a_formatter_coordsim_does_not_print_as_is_one_line_and_exit_2(tiny_run, args, message):
    result = CliRunner().invoke(main, ["offsets", str(tiny_run), *args])
    assert result.exit_code == 2 and result.output.startswith(f"Error: {message}")
    assert len(result.output.splitlines()) == 1
    with pytest.raises(FormatterError):
        list(offsets_log(tiny_run, formatter="GroupMetadataMessageFormatter", legacy=True))
