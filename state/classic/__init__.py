"""The classic group coordinator (Kafka's group-coordinator `classic` package and the classic half of
GroupMetadataManager): the group and its members, its states, and the manager answering JoinGroup, SyncGroup,
Heartbeat and LeaveGroup with results; the consumer protocol's byte blobs those requests carry.
"""
