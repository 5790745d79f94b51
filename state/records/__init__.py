"""What a group's coordinator appends to `__consumer_offsets`: the classic group's and the offsets' records, the
partition's contents, and the bytes Kafka writes for them.
"""
