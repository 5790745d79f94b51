"""The scenario's `cluster:` section: brokers, placement, a partition map given inline or as kafka-topics
describe output, the one partition count shared with the broker settings, and errors naming file, line, key."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from simulations.scenarios import ScenarioError, load_scenario, parse_scenario
from state.cluster import Broker, Cluster
from tests.simulations.scenarios.helpers import MINIMAL

DESCRIBE = Path(__file__).resolve().parents[2] / "data" / "cluster" / "consumer-offsets-describe.txt"


def parse(text: str):
    return parse_scenario(textwrap.dedent(text), "s.yaml", "s")


def test_a_scenario_without_a_cluster_is_as_before():
    scenario = parse(MINIMAL)
    assert scenario.cluster is None and scenario.broker == {}


def test_a_broker_count_places_the_default_topic_on_brokers_1_to_n_from_the_scenario_seed():
    scenario = parse("seed: 7\ncluster:\n  brokers: 6\n" + MINIMAL)
    cluster = scenario.cluster
    assert cluster.broker_ids == (1, 2, 3, 4, 5, 6)
    assert (cluster.num_partitions, cluster.replication_factor) == (50, 3)
    assert scenario.broker == {"offsets.topic.num.partitions": 50}  # the coordinator hashes onto the same count
    assert parse("seed: 7\ncluster:\n  brokers: 6\n" + MINIMAL).cluster == cluster
    assert parse("seed: 8\ncluster:\n  brokers: 6\n" + MINIMAL).cluster != cluster


def test_brokers_with_racks_and_topic_settings():
    cluster = parse("cluster:\n  brokers: [{id: 10, rack: a}, {id: 20, rack: b}, {id: 30, rack: 1}]\n"
                    "  offsets.topic.num.partitions: 12\n  offsets.topic.replication.factor: 2\n" + MINIMAL).cluster
    assert cluster.brokers == (Broker(10, "a"), Broker(20, "b"), Broker(30, "1"))
    assert (cluster.num_partitions, cluster.replication_factor) == (12, 2)


def test_the_broker_setting_alone_gives_the_cluster_its_partition_count():
    scenario = parse("broker:\n  offsets.topic.num.partitions: 10\ncluster:\n  brokers: 3\n" + MINIMAL)
    assert scenario.cluster.num_partitions == 10 and scenario.broker == {"offsets.topic.num.partitions": 10}


def test_an_explicit_map_names_its_own_brokers():
    scenario = parse("cluster:\n  replicas:\n    0: [1, 2]\n    1: [2, 3]\n    2: [3, 1]\n" + MINIMAL)
    assert scenario.cluster == Cluster((Broker(1), Broker(2), Broker(3)), ((1, 2), (2, 3), (3, 1)))
    assert scenario.broker == {"offsets.topic.num.partitions": 3}


def test_partitions_from_reads_kafka_topics_describe_output_next_to_the_scenario(tmp_path):
    shutil.copy(DESCRIBE, tmp_path / "offsets.txt")
    path = tmp_path / "s.yaml"
    path.write_text("cluster:\n  brokers: 3\n  partitions_from: offsets.txt\n" + MINIMAL)
    cluster = load_scenario(path).cluster
    assert (cluster.num_partitions, cluster.replication_factor, cluster.replicas[7]) == (50, 3, (2, 1, 3))


def test_a_describe_output_with_an_unknown_broker_names_its_own_line(tmp_path):
    (tmp_path / "offsets.txt").write_text(DESCRIBE.read_text().replace("Partition: 4\tLeader: 2\tReplicas: 2,1,3",
                                                                       "Partition: 4\tLeader: 2\tReplicas: 2,1,4"))
    path = tmp_path / "s.yaml"
    path.write_text("cluster:\n  brokers: 3\n  partitions_from: offsets.txt\n" + MINIMAL)
    with pytest.raises(ScenarioError) as error:
        load_scenario(path)
    assert str(error.value) == (f"{tmp_path / 'offsets.txt'}:6: cluster.partitions_from: partition 4: unknown "
                                "broker id 4 (brokers: 1, 2, 3)")


@pytest.mark.parametrize("text, message", [
    ("cluster:\n  brokers: 2\n" + MINIMAL,
     "s.yaml:1: cluster: offsets.topic.replication.factor is 3, more than the 2 broker(s) (the default is 3)"),
    ("cluster:\n  brokers: 2\n  offsets.topic.replication.factor: 4\n" + MINIMAL,
     "s.yaml:3: cluster.offsets.topic.replication.factor: offsets.topic.replication.factor is 4, more than the 2"),
    ("cluster:\n  brokers: 2\n  offsets.topic.replication.factor: 0\n" + MINIMAL,
     "s.yaml:3: cluster.offsets.topic.replication.factor: must be >= 1, got 0"),
    ("cluster:\n  brokers: 2\n  offsets.topic.num.partitions: 0\n" + MINIMAL,
     "s.yaml:3: cluster.offsets.topic.num.partitions: must be >= 1, got 0"),
    ("cluster:\n  brokers: [{id: 1}, {id: 2}, {id: 1}]\n" + MINIMAL,
     "s.yaml:2: cluster.brokers[2].id: broker id 1 is listed twice"),
    ("cluster:\n  brokers: [{id: 1, zone: a}]\n" + MINIMAL,
     "s.yaml:2: cluster.brokers[0].zone: unknown key 'zone' in a broker"),
    ("cluster:\n  offsets.topic.num.partitions: 10\n" + MINIMAL,
     "s.yaml:1: cluster: missing required key 'brokers' (the cluster)"),
    ("cluster:\n  brokers: 3\n  offsets.topic.num.partitions: 10\nbroker:\n  offsets.topic.num.partitions: 12\n"
     + MINIMAL, "s.yaml:5: broker.offsets.topic.num.partitions: is 12, but the cluster has 10 partitions "
                "(cluster.offsets.topic.num.partitions, line 3): give offsets.topic.num.partitions once"),
    ("cluster:\n  replicas: {0: [1, 2], 1: [2, 1]}\nbroker:\n  offsets.topic.num.partitions: 50\n" + MINIMAL,
     "s.yaml:4: broker.offsets.topic.num.partitions: is 50, but the cluster has 2 partitions (cluster.replicas"),
    ("cluster:\n  brokers: 3\n  replicas:\n    0: [1, 2]\n    1: [2, 9]\n" + MINIMAL,
     "s.yaml:5: cluster.replicas.1: partition 1: unknown broker id 9 (brokers: 1, 2, 3)"),
    ("cluster:\n  replicas:\n    0: [1, 2]\n    2: [2, 1]\n" + MINIMAL,
     "s.yaml:2: cluster.replicas: the partition map misses partition(s) 1"),
    ("cluster:\n  replicas:\n    0: [1, 2]\n    1: [2, 2]\n" + MINIMAL,
     "s.yaml:4: cluster.replicas.1: partition 1: duplicate replica in 2,2"),
    ("cluster:\n  replicas:\n    0: [1, 2]\n    one: [2, 1]\n" + MINIMAL,
     "s.yaml:4: cluster.replicas.one: 'one' is not a partition number"),
    ("cluster:\n  replicas: {0: [1, 2]}\n  offsets.topic.num.partitions: 50\n" + MINIMAL,
     "s.yaml:3: cluster.offsets.topic.num.partitions: is 50, but cluster.replicas has 1 partitions"),
    ("cluster:\n  replicas: {0: [1, 2]}\n  offsets.topic.replication.factor: 3\n" + MINIMAL,
     "s.yaml:3: cluster.offsets.topic.replication.factor: is 3, but cluster.replicas has 2 replicas"),
    ("cluster:\n  replicas: {0: [1, 2]}\n  partitions_from: offsets.txt\n" + MINIMAL,
     "s.yaml:2: cluster.replicas: give the partition map either here or as partitions_from, not both"),
    ("cluster:\n  brokers: 3\n  partitions_from: no-such-file.txt\n" + MINIMAL,
     "s.yaml:3: cluster.partitions_from: cannot read no-such-file.txt"),
])
def test_errors_name_the_line_and_the_key_path(text, message):
    with pytest.raises(ScenarioError) as error:
        parse(text)
    assert str(error.value).startswith(message), str(error.value)
    assert "\n" not in str(error.value)


def test_the_worked_example_in_docs_scenarios_md():
    import re

    text = (Path(__file__).resolve().parents[3] / "docs" / "scenarios.md").read_text()
    block = re.search(r"```yaml\n(seed: 0\ncluster:.*?)```", text, re.S).group(1)
    cluster = parse(block + MINIMAL).cluster
    for broker, partitions in cluster.partitions_led(cluster.broker_ids).items():
        assert f"| {broker} | {', '.join(map(str, partitions))} |" in text
    assert cluster.replicas[:3] == ((4, 5, 6), (5, 6, 1), (6, 1, 2)) and cluster.replicas[48] == (1, 3, 2)
    live, after_broker_1_fails = {1, 2, 3, 4, 5, 6}, {2, 3, 4, 5, 6}
    assert (cluster.coordinator_of("orders-0", live), cluster.coordinator_of("orders-0", after_broker_1_fails)) == (1, 3)
