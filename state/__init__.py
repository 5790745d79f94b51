"""coordsim's protocol core: Kafka's classic group coordinator for one group, as pure deterministic Python.

No Spark, no I/O, no clock reads: time is an argument and every deadline lives in the group state
(`state.runtime.GroupRuntime`). The Spark engine (`streaming/`) and the local engine (`simulations/`) both
drive this package and must produce identical tables.
"""
