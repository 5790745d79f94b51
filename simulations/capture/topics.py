"""The topics of a capture, from its Metadata responses, for its consumer groups (KIP-848).

ConsumerGroupHeartbeat names partitions by topic id, while the input contract names them by topic (docs/events.md),
and a consumer group's coordinator assigns from the cluster's topics, which a replay learns from TOPIC_METADATA
rows given before the group's first heartbeat. A capture holds both in the Metadata responses (v10+: name, id,
partitions) the clients asked for on any connection:

- every topic id a response describes is named wherever the import wrote it (the heartbeats' `topic_partitions`,
  the captured assignments). Kafka never reuses a Uuid, so an id has one name for the whole capture;
- each group that sent a ConsumerGroupHeartbeat gets a TOPIC_METADATA row at its first one (its `ts`, `seq` 0,
  so it comes first at that time): every topic described, as last described by then, else as first described
  (a client asks for the metadata of its subscription after it has joined, but the broker knew the topics all
  along); then a row whenever a later response describes a topic differently (partitions added, a topic
  created), at that response's time;
- OffsetCommit v10 and OffsetFetch v10 (Kafka 4.1+) name topics by id too: their offsets, partitions and
  captured results are named the same way;
- an id no response describes keeps the id as its topic name (a topic the simulated coordinator does not know),
  with a reject row `unknown topic id` at the first request that carries it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tableio.inputs import reject_row

HEARTBEAT_EVENT = "CONSUMER_GROUP_HEARTBEAT"
HEARTBEAT_API = "ConsumerGroupHeartbeat"
# The requests whose topics go by id from this version on, and the field of their events that names them.
BY_TOPIC_ID = {"OffsetCommit": 10, "OffsetFetch": 10}
BY_TOPIC_ID_EVENTS = {"OFFSET_COMMIT": "offsets", "OFFSET_FETCH": "partitions"}
# Uuid.ZERO_UUID's text: a topic queried by name that does not exist.
ZERO_ID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass(frozen=True)
class Description:
    topic_id: str
    name: str
    partitions: int


@dataclass
class TopicCatalog:
    """The topics the capture's Metadata responses describe, in capture order."""

    seen: list[tuple[int, Description]] = field(default_factory=list)  # (ts, description)

    def note(self, ts: int, body: dict) -> None:
        """A decoded Metadata response, captured at `ts` (epoch ms)."""
        for topic in body["topics"]:
            topic_id = topic["topic_id"]
            if topic["error_code"] == 0 and topic["name"] and topic_id and topic_id != ZERO_ID:
                self.seen.append((ts, Description(topic_id, topic["name"], len(topic["partitions"]))))

    def names(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for _, described in self.seen:
            found.setdefault(described.topic_id, described.name)
        return found

    def as_of(self, ts: int) -> dict[str, Description]:
        """Each topic (by name: a topic created again has a new id) as last described at or before `ts`, else
        as first described."""
        state: dict[str, Description] = {}
        for when, described in self.seen:
            if when <= ts or described.name not in state:
                state[described.name] = described
        return state


def resolve_topics(result, catalog: TopicCatalog) -> None:
    """Name the topic ids of an import's heartbeats and captured assignments, and add its consumer groups'
    TOPIC_METADATA rows (`result`: an importer.ImportResult, changed in place)."""
    names = catalog.names()
    frames = {row["request_id"]: row["request_frame"] for row in result.captured}
    by_id = {row["request_id"] for row in result.captured
             if row["api"] in BY_TOPIC_ID and row["api_version"] >= BY_TOPIC_ID[row["api"]]}
    apis = {row["request_id"]: row["api"] for row in result.captured}
    unknown: set[str] = set()

    def named(entries, request_id: str, keep_id: bool) -> list[dict]:
        out = []
        for entry in entries:
            topic_id = entry["topic_id"]
            if topic_id not in names and topic_id not in unknown:
                unknown.add(topic_id)
                result.rejects.append(reject_row(
                    topic_id, f"unknown topic id: {topic_id} ({apis.get(request_id, HEARTBEAT_API)} {request_id}): "
                    "no Metadata response "
                    "in the capture describes it; its partitions are kept under the id as topic name",
                    result.source, frames.get(request_id) or 0))
            out.append({"topic": names.get(topic_id, topic_id), **({"topic_id": topic_id} if keep_id else {}),
                        "partitions": entry["partitions"]})
        return out

    def named_by_id(entries, request_id: str) -> list[dict]:
        return [{**entry, "topic": named([{"topic_id": entry["topic"], "partitions": None}], request_id,
                                         keep_id=False)[0]["topic"]} for entry in entries]

    for event in result.events:
        if event["type"] == HEARTBEAT_EVENT and event["topic_partitions"] is not None:
            event["topic_partitions"] = named(event["topic_partitions"], event["request_id"], keep_id=True)
        field = BY_TOPIC_ID_EVENTS.get(event["type"])
        if field and event.get("request_id") in by_id and event[field] is not None:
            event[field] = named_by_id(event[field], event["request_id"])
    for row in result.captured:
        if row["request_id"] in by_id and row["results"] is not None:
            row["results"] = named_by_id(row["results"], row["request_id"])
        if row["api"] == HEARTBEAT_API and row["assignment"] is not None:
            # As the simulator answers: topics in name order, partitions sorted.
            row["assignment"] = sorted(({**e, "partitions": sorted(e["partitions"])}
                                        for e in named(row["assignment"], row["request_id"], keep_id=False)),
                                       key=lambda e: e["topic"])
    result.events[:] = _with_topic_rows(result.events, catalog)


def _with_topic_rows(events: list[dict], catalog: TopicCatalog) -> list[dict]:
    first: dict[str, int] = {}  # group -> ts of its first heartbeat
    for event in events:
        if event["type"] == HEARTBEAT_EVENT:
            first.setdefault(event["group_id"], event["ts"])
    rows = []
    for group, start in first.items():
        state = catalog.as_of(start)
        if state:
            rows.append(_topic_row(start, group, state.values()))
        for when, described in catalog.seen:
            if when > start and state.get(described.name) != described:
                state[described.name] = described
                rows.append(_topic_row(when, group, [described]))
    rows.sort(key=lambda row: row["ts"])
    # A stable merge: a topic row goes before the events of its time, which keep the capture's order.
    merged, pending = [], iter(rows)
    row = next(pending, None)
    for event in events:
        while row is not None and row["ts"] <= event["ts"]:
            merged.append(row)
            row = next(pending, None)
        merged.append(event)
    if row is not None:
        merged.append(row)
    merged.extend(pending)
    return merged


def _topic_row(ts: int, group: str, described) -> dict:
    return {"ts": ts, "seq": 0, "group_id": group, "type": "TOPIC_METADATA",
            "topics": [{"topic": d.name, "partitions": d.partitions, "topic_id": d.topic_id}
                       for d in sorted(described, key=lambda d: d.name)]}
