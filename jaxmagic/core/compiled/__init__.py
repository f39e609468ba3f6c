"""The compiled program, joined back to the jaxpr.

`--profile`, `--sharding`, `--memory` and `--kernels` read XLA's view of the user's call,
each equation found again in it through a tag: a copy of the jaxpr whose name stacks end in
`jaxmagic#<index>` (`profile.tagged`), lowered, so every HLO instruction's `op_name`
names the equations it came from.

  hlo          the one reader of HLO text: instructions, computations, tags, device groups
  profile      the tagged copy and its compile; the profiler run and the time join
  analysis     one more compile of it with XLA's dump on: the program before
               partitioning, the buffer assignment and live ranges
  collectives  the collectives the partitioner inserted (`--sharding`)
  propagation  the sharding XLA chose for each value (`--sharding` on an Auto mesh)
  memory       live bytes over the schedule, the peak and what is live there (`--memory`)
  kernels      the kernels XLA made, their equations, bytes and flops (`--kernels`)

Nothing outside this package reads HLO text.
"""
