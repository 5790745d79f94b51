"""Conformance against a real Kafka broker (issue 31): real Java consumers against a real Kafka 4.x cluster
(KRaft, on loopback), their traffic captured, replayed through coordsim and compared answer by answer, and the
records the broker wrote to `__consumer_offsets` compared with coordsim's tables.

- `maven`: a Kafka version's broker and client jars, resolved by the Maven project in `conformance/`.
- `processes`: every process the suite starts, stopped by its id whatever happens.
- `cluster`: the KRaft cluster (one combined node, or three) on 127.0.0.1, its data in a temp folder.
- `driver`: the Java driver (`conformance/src/ConformanceDriver.java`): scripted consumers and admin tasks.
- `sniffer`: dumpcap on `lo` for the brokers' ports.
- `scenarios`: the scripted scenarios, classic and `group.protocol=consumer`.
- `offsets_topic`: the broker's `__consumer_offsets` records against coordsim's tables.
- `explain`: every difference named with its cause.
- `runner`: one scenario end to end; `commands`: `coordsim conformance`.

docs/conformance.md is the user's guide and holds the measured table.
"""


class ConformanceError(Exception):
    """A bad state of the suite's surroundings (Maven unreachable, a port in use, a broker that does not start,
    a tool missing): one line for the user, every process already stopped."""
