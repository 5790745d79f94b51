"""Table and file I/O below both engines: what the local engine (simulations/) and the Spark engine
(streaming/) share to read inputs and to write and record a run, so neither engine imports the other's
package for it."""
