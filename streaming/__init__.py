"""The Spark Structured Streaming adapter: session builder, event source, the applyInPandasWithState step
that drives `state.runtime.group_runtime.GroupRuntime` per group, and the table sinks. Nothing here decides protocol
behaviour; it only moves events and rows between Spark and the core."""
