"""coordsim's protocol core: Kafka's group coordinator (classic and consumer groups) and the clients around one
group, as pure deterministic Python, in Kafka's shape (docs/architecture.md).

No Spark, no I/O, no clock reads: time is an argument and every deadline lives in the group state
(`state.runtime.group_runtime.GroupRuntime`). The Spark engine (`streaming/`) and the local engine (`simulations/`) both
drive this package and must produce identical tables.
"""
