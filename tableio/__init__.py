"""Table and file I/O below both engines: what the local engine (simulations/) and the Spark engine
(streaming/) share to read inputs (event files, captured responses, the broker settings files), to derive
the tables computed from the others once a run ends (`lag_status`), and to write and record a run, so that
neither engine imports the other's package for it. It imports only `state` (tests/test_layers.py)."""
