"""Topic ids: Kafka's text form, and the id coordsim derives for a topic whose input names none."""

from __future__ import annotations

import uuid

from state.consumer_group.topic_id import TopicId, derived_topic_id


def test_the_text_form_round_trips():
    assert str(TopicId.from_string("Xq6LK8SnRkGxz7Da8ZvqLA")) == "Xq6LK8SnRkGxz7Da8ZvqLA"


def test_a_derived_id_is_a_version_4_uuid_fixed_by_the_name():
    names = [f"topic-{i}" for i in range(200)]
    ids = [derived_topic_id(name) for name in names]
    assert ids == [derived_topic_id(name) for name in names]
    assert len(set(ids)) == len(ids)
    for topic_id in ids:
        raw = topic_id.msb.to_bytes(8, "big", signed=True) + topic_id.lsb.to_bytes(8, "big", signed=True)
        assert uuid.UUID(bytes=raw).version == 4
        # Uuid.randomUuid never returns an id whose text starts with '-' (it would read as a CLI option).
        assert not str(topic_id).startswith("-")
    assert str(derived_topic_id("orders")) == "ofnGqrYJQ32oP1afX_OMFg"
