"""Kafka error names (and codes) that the coordinator answers with, or a synthetic client's failed connection
comes to, and the mapping Kafka applies when an append of the group's records to __consumer_offsets fails."""

from __future__ import annotations

# Name -> Kafka error code (org.apache.kafka.common.protocol.Errors). Names are what our tables carry.
ERROR_CODES: dict[str, int] = {
    "UNKNOWN_SERVER_ERROR": -1,
    "NONE": 0,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "INVALID_FETCH_SIZE": 4,
    "NOT_LEADER_OR_FOLLOWER": 6,
    "REQUEST_TIMED_OUT": 7,
    "MESSAGE_TOO_LARGE": 10,
    "OFFSET_METADATA_TOO_LARGE": 12,
    "NETWORK_EXCEPTION": 13,
    "COORDINATOR_LOAD_IN_PROGRESS": 14,
    "COORDINATOR_NOT_AVAILABLE": 15,
    "NOT_COORDINATOR": 16,
    "RECORD_LIST_TOO_LARGE": 18,
    "NOT_ENOUGH_REPLICAS": 19,
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20,
    "ILLEGAL_GENERATION": 22,
    "INCONSISTENT_GROUP_PROTOCOL": 23,
    "INVALID_GROUP_ID": 24,
    "UNKNOWN_MEMBER_ID": 25,
    "INVALID_SESSION_TIMEOUT": 26,
    "REBALANCE_IN_PROGRESS": 27,
    "INVALID_COMMIT_OFFSET_SIZE": 28,
    "GROUP_AUTHORIZATION_FAILED": 30,
    "UNSUPPORTED_VERSION": 35,
    "INVALID_REQUEST": 42,
    "KAFKA_STORAGE_ERROR": 56,
    "GROUP_ID_NOT_FOUND": 69,
    "MEMBER_ID_REQUIRED": 79,
    "FENCED_INSTANCE_ID": 82,
    "GROUP_MAX_SIZE_REACHED": 81,
    "UNSTABLE_OFFSET_COMMIT": 88,
    "FENCED_MEMBER_EPOCH": 110,
    "UNRELEASED_INSTANCE_ID": 111,
    "UNSUPPORTED_ASSIGNOR": 112,
    "STALE_MEMBER_EPOCH": 113,
    "INVALID_REGULAR_EXPRESSION": 128,
}

NONE = "NONE"
# A synthetic client's failed connection, as its `responses` row says: no broker answered the request (it was
# sent to a broker that was down, or parked at one that failed).
NETWORK_EXCEPTION = "NETWORK_EXCEPTION"


def append_error_to_response_error(error: str) -> str:
    """What a client sees when the append of a group's records fails (Kafka's
    appendGroupMetadataErrorToResponseError): storage-side errors become coordinator errors."""
    if error in ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT"):
        return "COORDINATOR_NOT_AVAILABLE"
    if error in ("NOT_LEADER_OR_FOLLOWER", "KAFKA_STORAGE_ERROR"):
        return "NOT_COORDINATOR"
    if error in ("MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_FETCH_SIZE"):
        return "UNKNOWN_SERVER_ERROR"
    return error
