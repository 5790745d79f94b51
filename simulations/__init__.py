"""Everything around the protocol core that touches the outside world: reading event files
(`tableio.inputs`), writing and reading the output tables (`tableio.parquet`), the engines that
drive `state.runtime.GroupRuntime` over a whole input (`simulations.engines`), the broker settings from
`conf/` (`simulations.settings`), the bundled sample trace (`simulations/samples/`) and the `coordsim`
command line (`simulations.cli`).
"""
