// Package fleetsim is a fleet simulator anyone can run (`binlake bench fleet`): a seeded
// heterogeneous fleet of waves and capture instances whose CPU cost is known exactly,
// driven through a judge's public HTTP API round by round the way agents and the wave's
// balancer drive it, so that the plans the judge makes can be measured against the truth
// and against references that know it.
//
// The fleet: waves of several capacities (cores), each with its own cost prices (a host
// speed factor): a wave uses RowPrice·Σrows/s + BytePrice·Σbytes/s + ReadPrice·Σbinlog
// bytes/s + Idle cores. Instances have lognormal rows/s and row sizes and a diurnal
// multiplier 1 + A·cos(2π(h − peak)/24) with peaks clustered in a few regions, so that
// waves peak at different hours; a share of them (Options.FilteredShare) keep only part
// of their source and read a lognormal multiple of the bytes they publish, the others
// read what they publish. With Options.HostShare the waves of a capacity class share hosts
// (several to one), each host's agents reporting its cores, its CPU (its waves' processes
// and other work on it, Options.HostOther) and its boot id. The initial assignment is
// round-robin by count.
//
// A run: the simulated agents report each wave (cpu.cores, cpu.util, mem.used_pct,
// load.1, wave.cpu_cores, wave.instances and per instance wave.tps, wave.bytes_per_s,
// wave.instance_running and, when reading is priced, wave.binlog_bytes_per_s, with
// measurement noise) over POST /v1/metrics for a simulated day of history, then a
// balancer asks POST /v1/rebalance with the assignment as a balancer reads it from the
// coordinator, applies the plan's moves (recording when each instance moved, for the
// cooldown), lets simulated time pass while the agents keep reporting, and asks again,
// until a plan is empty or a round limit.
//
// By default the judge is an in-process one on a SQLite store of a temporary folder,
// served over real HTTP on 127.0.0.1, whose clock is the simulation's: a day of history
// takes seconds. Options.JudgeURL drives an external judge instead, in real time.
//
// The report holds the true utilisation (CPU demand over cores) of every wave, now and at
// its daily peak, for the judge's final assignment, the initial one and the references:
// a greedy assignment by true cost over capacity from scratch, a move-by-move descent
// from the initial assignment (how many moves a good plan needs), and a lower bound.
package fleetsim
