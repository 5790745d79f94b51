//! Mirrors part of `state/errors.py`: what a client sees when the append of a group's records fails.

/// Kafka's appendGroupMetadataErrorToResponseError: storage-side errors become coordinator errors.
pub fn append_error_to_response_error(error: &str) -> &str {
    match error {
        "UNKNOWN_TOPIC_OR_PARTITION" | "NOT_ENOUGH_REPLICAS" | "REQUEST_TIMED_OUT" => "COORDINATOR_NOT_AVAILABLE",
        "NOT_LEADER_OR_FOLLOWER" | "KAFKA_STORAGE_ERROR" => "NOT_COORDINATOR",
        "MESSAGE_TOO_LARGE" | "RECORD_LIST_TOO_LARGE" | "INVALID_FETCH_SIZE" => "UNKNOWN_SERVER_ERROR",
        other => other,
    }
}
