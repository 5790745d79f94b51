"""Committed offsets (Kafka's OffsetMetadataManager): OffsetCommit, OffsetFetch and the expiry sweep, and the
production model the offsets are measured against.
"""
