"""simulations/conformance/cluster.py: the cluster id handed to StorageTool never reads as an option."""

import uuid

from simulations.conformance import cluster


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch):
    # Kafka's Uuid.randomUuid draws again for an id that prints with a leading '-'; StorageTool's `-t -x...` failed
    # with "argument --cluster-id/-t: expected one argument" (classic-coordinator-failover against 4.0.0).
    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" + bytes(15))])
    monkeypatch.setattr(cluster.uuid, "uuid4", lambda: next(drawn))
    assert cluster.new_cluster_id() == "AQAAAAAAAAAAAAAAAAAAAA"
