"""The native seam's errors (docs/native.md, "Safety and errors"): input that cannot be read is a TypeError
naming the argument, input a leader cannot have is the reference's ValueError, and Kafka's own failures are
the reference's messages under the native exception kinds; nothing native leaks through as a panic."""

from __future__ import annotations

import pytest

from state.assignors import MemberSubscription
from state.consumer_group.group_spec import GroupSpec, SubscriptionType
from tests.native import cores


@pytest.fixture(scope="module")
def native():
    cores.require_native()
    import coordsim_native

    return coordsim_native


def test_an_unreadable_member_is_a_type_error_naming_it(native) -> None:
    members = [MemberSubscription("a", ("t",)), object()]
    with pytest.raises(TypeError, match=r"^assign: members\[1\]: "):
        native.assignors.assign("range", members, {"t": 1})


def test_unreadable_partition_counts_are_a_type_error_naming_them(native) -> None:
    with pytest.raises(TypeError, match=r"^assign: partitions_per_topic: "):
        native.assignors.assign("range", [MemberSubscription("a", ("t",))], {"t": "three"})
    with pytest.raises(TypeError, match=r"^assign_server: partition_counts: "):
        native.assignors.assign_server("uniform", GroupSpec({}, SubscriptionType.HOMOGENEOUS), {"not an id": 1})


def test_a_member_listed_twice_is_the_references_value_error(native) -> None:
    members = [MemberSubscription("it's", ("t",)), MemberSubscription("it's", ("t",))]
    with pytest.raises(ValueError) as native_error:
        native.assignors.assign("range", members, {"t": 1})
    with pytest.raises(ValueError) as python_error:
        cores.classic_assign("python")("range", members, {"t": 1})
    assert str(native_error.value) == str(python_error.value)


def test_an_unknown_assignor_is_kafkas_exception_or_a_value_error(native) -> None:
    with pytest.raises(native.assignors.AssignorError, match="invalid assignment protocol: nope"):
        native.assignors.assign("nope", [], {})
    with pytest.raises(ValueError, match='no server-side assignor "nope"'):
        native.assignors.assign_server("nope", GroupSpec({}, SubscriptionType.HOMOGENEOUS), {})


def test_something_that_is_not_a_record_is_a_type_error_naming_its_class(native) -> None:
    with pytest.raises(TypeError, match=r"^record_bytes: record: not a group coordinator record: dict$"):
        native.record_bytes.record_bytes({}, "g")
    with pytest.raises(TypeError, match=r"^batch_size: records\[0\]: "):
        native.record_bytes.batch_size([1], "g")
