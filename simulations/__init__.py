"""Everything around the protocol core and the two engines' shared table code (`tableio/`): the local engine
that drives `state.runtime.group_runtime.GroupRuntime` over a whole input in this process (`simulations.engines`),
scenarios and their synthetic clients, the import and comparison of captures, the views, reports and validation of a
run, the bundled sample trace (`simulations/samples/`) and the `coordsim` command line (`simulations.cli`),
which drives either engine. The Spark engine (`streaming/`) never imports this package.
"""
