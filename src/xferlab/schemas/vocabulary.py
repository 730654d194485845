"""Every field name ``--json`` prints, once: ``name  type[?]  unit-or-kind  meaning`` (see :mod:`.fields`).
Here the labels, flags, counts, ratios and values; the quantities in :mod:`.quantities`."""

from .quantities import QUANTITIES

TABLE = """
# --- what a row is about: labels
backend               string   label   the device API: opencl, cuda, sycl, emulated (the runtime's bus), or the backend's own name
basis                 string   label   what a scenario's figure rests on: independent, seed-inputs or fitted
baseline              string   label   the link or strategy a comparison is against
buffer                string   label   where a network test's buffers live: host or device (mixed: one side each)
buffers               string?  label   a network test's buffers per side in OSU's notation, the sender's first: H H, H D, D H, D D (a collective's one kind: H or D)
by                    string   label   the link put in place of `replaced`
candidate             string   label   the link a scenario compares with its baseline
class                 string   label   a study's class of measurement (local, remote, cxl, pmem …)
command               string   label   the command (a run's, or the one that printed the object)
configuration         string   label   a DecEval configuration: its device work per element (x1, x16 …)
model                 string   label   a fitted model: plain, packet, piecewise1 or piecewise2
poor_cause            string?  label   why a fit is poor: drift, noise or model (null: it is not)
model_limit_op        string   label   the link operation whose peak the copies are held against
counting              string?  label   the counting rule of the row's bandwidth (copy, bidir, chunks, stream, loaded, babelstream, osu-bw, osu-bibw; the output's conventions give each); null: not a bandwidth
peak_source           string   label   where hardware_peak_bytes_per_second came from, or why there is none ("peak unknown: …", "no link: …")
copy_at                string?  label   where the copy kernel's best bandwidth was reached
mul_at                 string?  label   where the mul kernel's best bandwidth was reached
add_at                 string?  label   where the add kernel's best bandwidth was reached
triad_at               string?  label   where the triad kernel's best bandwidth was reached
dot_at                 string?  label   where the dot kernel's best bandwidth was reached
read_at                string?  label   where the read kernel's best bandwidth was reached
cpu_model             string   label   the CPU's model name
cpu_vendor            string   label   the CPU's vendor
cpus                  string   label   CPUs (a list such as 0-3,8)
pinned_cpu            string?  label   the CPU(s) the host thread was pinned or placed on (--pin, --cpus), as `cpus` (null: neither)
description           string   label   what a link model is
direction             string   label   a copy's direction: h2d, d2h, d2d or bidir
error                 string?  label   why a point failed (null: it did not)
experiment            string   label   what a study measures
fastest               string   label   the fastest link at this size
faster                string   label   the link that is faster at this size
faster_above          string   label   the link faster above the crossover
faster_below          string   label   the link faster below the crossover
field                 string   label   a link model's parameter
figure                string   label   a seed document's figure or table row
section               string   label   where in the seed document a scenario's figure is (slide, section, table)
compute               string   label   the model function that computes a `figures` scenario row's xferlab value
flow                  string   label   a data flow (staged, direct, pipelined) or a stage
frequency_governor    string   label   the CPU frequency governor
governor              string   label   the CPU frequency governor while measuring
group                 string   label   the results-store group a study or sweep records under
src                   string   label   a device matrix cell's source: host or a device (#index)
dst                   string   label   a device matrix cell's destination: host or a device (#index)
headline              string   label   the statistic the table shows first, and why
host                  string   label   a rank's host name
host_kind             string?  label   the host memory kind of a copy: pageable, pinned, svm-coarse, svm-fine, managed …
hostname              string   label   this machine's host name
kernel                string   label   a kernel (STREAM's copy, triad …; for `inventory`: the OS kernel)
key                   string   label   a study step's key
kind                  string   label   what sort of thing the row is (a link family, a scenario kind, an operation)
label                 string   label   what a study step does
link                  string?  label   a link: a preset, a profile, an override or a label
link_a                string   label   the first link compared
link_b                string   label   the second link compared
memory_node           string?  label   a campaign figure's memory node (its `node` is the campaign's node); a memory matrix cell's memory (column) node
cpu_node              string   label   a memory matrix cell's CPU node: the node whose CPUs ran the threads (its row)
memory                string   label   where a kernel's arrays live: device, pinned, host, svm …
metric                string   label   what a sample measures (seconds, bytes_per_second …): the unit of its statistics
mix                   string?  label   a loaded-latency curve's read/write mix: read, write, nt-write, R:W or R:W-nt (R lines read per W written; -nt: non-temporal stores)
mode                  string?  label   a memory mode, a runtime mode (sync, parallel, forward) or a collaboration version
name                  string   label   a name (a link preset, a scenario)
node                  string?  label   a memory (NUMA) node, or a campaign's node
numa_node             integer? label   an accelerator's NUMA node (null: the platform gives none, sysfs's -1)
pci_bus_id            string?  label   a PCI address, DDDD:BB:DD.F (null: none, such as a host CPU device)
note                  string   label   a remark on a row
op                    string   label   an operation: write, read or readwrite; in a timeline, the operation's name
opset                 string   label   the offload runtime's operation set
pair                  string?  label   a network rank pair's kind (intra-node, inter-node)
pair_hosts            string   label   a network pair's ranks and their hosts ("0 A ↔ 2 B"), where the ranks span hosts
part                  string   label   a study table's part (copies, collaboration, network; stage or flow)
path                  string?  label   a network test's data path (host, staged, direct); a device matrix cell's copy path (null: N/A)
rma_sync              string?  label   a one-sided network test's synchronization (OSU's -s: lock, flush, flush_local, lock_all, fence, pscw)
rma_window            string?  label   a one-sided network test's window (OSU's -w: allocate, create)
pattern               string   label   a CHAI collaboration pattern: histogram, taskqueue, pad, trns or bs
placement             string   label   where a campaign figure was measured (node, mode, threads)
reason                string   label   why something was skipped or failed
replaced              string   label   the link replaced in a what-if
resource              string   label   a simulated resource (a link or a device)
run_id                string?  label   a run's id in the results store
runner_up             string   label   the second fastest link
scenario              string   label   a packaged scenario
source                string   label   where a model, scenario or figure comes from (a spec, a paper, a seed document; sysfs, hwloc)
statistic             string   label   the statistic a figure is (median, best …)
status                string   label   a status: a run's (ok, failed, interrupted, running), a step's or a check's
status_reason         string   label   why a check has its status
stopped               string?  label   why a point stopped repeating: fixed, precision, max-time or max-iterations
store                 string   label   the results store's path
strategy              string   label   a flow strategy: staged, direct, coherent or pipelined
study                 string   label   a study's name
suite                 string   label   a measurement suite (memory, device, network …)
system                string   label   a system (YAML file or packaged name)
test                  string   label   a test within a suite (copy, triad, latency, bw …)
tier                  string   label   a memory tier profile's name
title                 string   label   a scenario's title
type                  string   label   an element type: float or double
unit                  string   label   the unit of the row's `seed` and `xferlab` figures: s, bytes, x (a ratio), or a `figures` scenario's own (GB/s, us, % …)
version               string   label   a collaboration version: D (copies) or U (shared memory)
what                  string   label   what a row is (a copy direction and memory kind, a pattern and version …)
where                 string   label   where something ran (a CPU, unpinned; a sweep's executor)
workflow              string   label   a workflow (YAML file or packaged name)
workload              string   label   an offload runtime workload
seed_document         string   label   the seed document a study reproduces (seed 000 … seed 004)
architecture          string   label   the CPU architecture
os                    string   label   the operating system
array_size_class      string?  label   STREAM's class of the arrays against the last-level cache: memory, cache-resident …
atomics_path          string?  label   how the device's atomics reach host memory (CHAI U)
groups_rule           string?  label   how a launch's work-groups were chosen (CHAI PAD on a CPU device: the CPUs the host threads leave free)
against               string   label   the link model a fit is compared with
folder                string   label   the folder the lab wrote
report                string?  label   the report's path
plot                  string   label   the plot file written for this row
profile               string   label   the link profile saved from this fit (a LINK name)
profiles_folder       string   label   the folder of saved link profiles
previous_profiles     string?  label   where the profiles that the lab replaced were kept
shard                 string   label   a shard file imported
allocator             string   label   who allocated a host buffer: runtime or application
limited_by            string   label   what bounds a CXL link's request bandwidth: requests (Little's law) or flits
bias                  string   label   the bias of CXL Type 2 devices' memory in a simulation: host or device
reference_mode        string   label   the memory mode a PMDK row is set against (app-direct+persist: the raw mapping persisted)
# --- flags
best                  boolean  flag    the fastest point of its system, link and workflow
emulated              boolean? flag    an App-Direct or PMDK row persisted under PMDK's pmem emulation (PMEM_IS_PMEM_FORCE=1) on a mapping that is not DAX: page cache, not persistent memory (null: not App-Direct)
best_cpu              boolean  flag    the CPU with the lowest launch latency
jitter                boolean  flag    this CPU's p99 launch latency is more than twice the best p99 of the pinned CPUs
hypervisor            boolean  flag    the machine runs under a hypervisor
incomplete            boolean  flag    the process recording the run was killed before finishing it
ok                    boolean  flag    every run gave the right result
pays                  boolean? flag    offloading saves time (advise bias: device bias does; runtime bench: the offloaded run beat the host, null off the emulated bus)
sync_pays             boolean? flag    sync mode's offloaded run beat the host (null: no free-bus run to compare)
parallel_pays         boolean? flag    parallel mode's offloaded run beat the host (null: no free-bus run to compare)
forward_pays          boolean? flag    forward mode's offloaded run beat the host (null: no free-bus run to compare)
held_out              boolean  flag    the flow's chunk size was not used to fit the stage models
imported              boolean  flag    the run was new to the store (false: it was there already)
outlier               boolean  flag    this node's figure is far from the others'
poor                  boolean  flag    the fit misses its held-out sizes by more than the noise allows
# --- counts
chunks                integer? count   chunks a transfer is cut into
outstanding           integer  count   CXL.cache requests in flight
accesses              integer  count   a device's accesses (64-byte lines) to a region between two bias flips
break_even_accesses   integer  count   the fewest accesses between two flips at which device bias pays
flips                 integer  count   bias flips (regions) a simulated workflow implies
cores                 integer  count   CPU cores
count                 integer  count   timed samples behind the statistics
evaluated             integer  count   points evaluated
evaluations           integer  count   evaluations (a sweep's points; DecEval: device work per element)
exit_code             integer  count   the exit code the command ends with
failed                integer  count   points or runs that failed
failure_count         integer  count   failures recorded with the run
groups                integer  count   work-groups per launch
host_threads          integer  count   host threads beside the device
instances             integer  count   concurrent kernel instances
iterations            integer  count   timed iterations
kernel_args           integer? count   buffer arguments of a launched kernel
loaded_points         integer  count   points of the loaded-latency curve
local                 integer  count   work-items per work-group
ops                   integer  count   operations a resource ran
points_skipped        integer  count   points left out (for want of time)
problem_size          integer  count   a runtime workload's problem size: rows, grid side or array length (--problem-size)
rank                  integer  count   an MPI rank
repeats               integer  count   runs per point
requests              integer  count   requests the runtime sent the device
reused                integer  count   points taken from earlier runs
samples               integer  count   samples recorded
threads               integer? count   threads
transfers             integer  count   transfers
unvalidated           integer  count   samples whose result was not checked
unvalidated_samples   integer  count   samples whose result was not checked
warmups               integer  count   warm-up samples (not in the statistics)
width                 integer? count   elements per work-item
windows               integer  count   request windows
window                integer? count   requests per window of the opportunity statistics (seed 002: 8; null: a trace stored before it was recorded)
work_rounds           integer  count   rounds of work the host spends on every operation (--work)
device_rounds         integer  count   rounds of work the emulated device spends on every request (work / speed)
delay                 integer? count   a loaded-latency point: the traffic threads' delay between accesses (loop iterations)
traffic_threads       integer? count   loaded latency's traffic generators (every CPU but the chase's)
bootstrap_resamples   integer  count   bootstrap resamples behind a fit's intervals
points                integer  count   measurements a fit used
sizes                 integer  count   sizes a fit used
rows                  integer  count   a sparse matrix's rows
nnz                   integer  count   a sparse matrix's nonzero entries
ranks                 integer  count   MPI ranks
touches               integer  count   pages (strides) a kernel touched
device_index          integer  count   a device's index
peer_index            integer  count   the peer device's index
src_device            integer? count   a device matrix cell's source device index (null: host memory)
dst_device            integer? count   a device matrix cell's destination device index (null: host memory)
measured_cells        integer  count   a device matrix's cells measured in one direction
na_cells              integer  count   a device matrix's cells N/A in one direction (the cells give why)
bus_transactions      integer  count   the runtime's bus transactions: lines written and read, plus doorbells
lines_written         integer  count   64-byte lines written to the device
coalesced_lines       integer  count   lines that carried more than one record
lines_read            integer  count   lines read back
result_reads          integer  count   results read back by the host
waits                 integer  count   times the host waited for results
forwarded             integer  count   operands forwarded on the device, not read back
drains                integer  count   ring drains
flushes_for_dependency integer count   flushes forced by a dependency
counted_records       integer  count   records the bus counted
counted_doorbells     integer  count   doorbells the bus counted
counted_lines_received integer count   lines the bus received
counted_read_requests integer  count   read requests the bus counted
counted_lines_sent    integer  count   lines the bus sent
counted_values_sent   integer  count   values the bus sent back
counted_status_reads  integer  count   status-word reads the bus counted
counted_forwarded     integer  count   operands the bus saw forwarded
counted_kept          integer  count   results the bus kept on the device
counted_transactions  integer  count   transactions the bus counted itself
level_width_max       integer  count   the widest level of independent requests
level_width_mean      number   count   independent requests per level, mean
level_width_median    number   count   independent requests per level, median
level_width_p90       number   count   independent requests per level, 90th percentile
use_distance_max      integer  count   requests between a result's issue and its use, largest
use_distance_median   number   count   requests between a result's issue and its use, median
use_distance_p90      number   count   requests between a result's issue and its use, 90th percentile
ideal_parallelism     number   count   requests / levels: the parallelism of an ideal machine
# --- ratios
r2_log                number   ratio   R² of the fit on log times
fraction_of_model_limit number ratio   the best measured bandwidth / the link model's peak
pmdk_overhead         number?  ratio   1 - a PMDK mode's best bandwidth / the raw mapping's persisted (reference_mode) best, same kernel, threads and arrays, same run (seed 003: 10-15 %); null: no reference row
fraction_of_peak      number   ratio   the row's bandwidth / hardware_peak_bytes_per_second (STREAM: the best iteration's); 1 is 100 %
cov                   number   ratio   the coefficient of variation: sample standard deviation / mean
bus_factor            number   ratio   nccl-tests' factor from a collective's algorithm to its bus bandwidth (2(n-1)/n for allreduce …)
overlap               number   ratio   OSU's overlap of a non-blocking collective: max(0, 1 - (overall - compute) / pure); 1 is 100 %
total_cov             number   ratio   the total time's coefficient of variation
device_share          number   ratio   the share of the work the device takes
speedup               number   ratio   how many times faster than the baseline
speedup_over_sync     number   ratio   time in sync mode / this mode's
speedup_vs_d          number   ratio   D's total time / this version's
parallel_speedup      number   ratio   sync's time / parallel mode's
forward_speedup       number   ratio   sync's time / forward mode's
time_ratio            number   ratio   link A's time / link B's
runner_up_ratio       number   ratio   the runner-up's time / the fastest's
p_over_o              number   ratio   P/O: the time saved / the time the bus costs
sync_p_over_o         number?  ratio   P/O of sync mode
parallel_p_over_o     number?  ratio   P/O of parallel mode
forward_p_over_o      number?  ratio   P/O of forward mode
device_speed          number?  ratio   the emulated device's compute speed relative to the host (null: the emulator's own pace)
measured_device_speed number?  ratio   the host's time / the emulated device thread's busy time (null: no speed asked)
break_even_speed      number?  ratio   the device speed at which seed 002's model gives P/O = 1 (null: none pays)
forward_break_even_speed number? ratio the model's break-even device speed for forward mode
measured_break_even_speed number? ratio the smallest swept device speed whose measured P/O passes 1 (geometric mean with the speed before; null: none)
utilization           number   ratio   busy time / makespan
transactions_saved    number   ratio   1 - this mode's bus transactions / sync's
counted_saved         number   ratio   1 - the transactions the bus counted / sync's
forward_transactions_saved number ratio 1 - forward mode's bus transactions / sync's
forward_counted_saved number   ratio   1 - forward mode's counted transactions / sync's
recent_operand_share  number   ratio   operands produced by one of the last 7 requests
host_read_share       number   ratio   results the host reads
unused_share          number   ratio   results nothing uses
tolerance             number   ratio   the relative deviation accepted as a reproduction
relative_to_d         number   ratio   this version's total time / D's
relative_to_opencl    number?  ratio   this backend's median launch time / OpenCL's on the same device (null: no OpenCL run beside)
relative_to_largest_chunk number ratio this chunk size's time / the largest chunk's
relative_to_runtime_aligned number ratio this buffer's median bandwidth / a runtime-allocated, page-aligned one's
speedup_vs_fewest_groups number ratio best bandwidth / that with the fewest work-groups
speedup_vs_one_instance number ratio best bandwidth / that with one kernel instance
relative_to_local     number   ratio   this class's bandwidth / local DRAM's
spread_across_cpus    number   ratio   slowest CPU's launch latency / fastest's
p99_over_best_cpu     number?  ratio   this CPU's p99 launch latency / the best (lowest) p99 of the pinned CPUs
mads                  number   ratio   distance from the median over nodes, in median absolute deviations
allocation_normalized number   ratio   allocation time / D's total
copy_normalized       number   ratio   copy time / D's total
kernel_normalized     number   ratio   kernel time / D's total
dm_normalized         number   ratio   data-movement time / D's total
total_normalized      number   ratio   total time / D's total
# --- values in the unit the row names
seed                  number   value   the seed document's figure, in the row's `unit` (the low end where it gives a range)
seed_high             number   value   the high end of a range the seed document gives (the deviation is from the nearer end; 0 inside)
xferlab               number   value   xferlab's figure, in the row's `unit`
value                 any      value   a link parameter's value, in the unit its name says
min                   number   value   the smallest sample, in the row's `metric`
median                number   value   the median, in the row's `metric`
mean                  number   value   the mean, in the row's `metric`
max                   number   value   the largest sample, in the row's `metric`
median_ci_low         number   value   the low end of the median's 95 % interval, in the row's `metric`
median_ci_high        number   value   the high end of the median's 95 % interval, in the row's `metric`
median_over_nodes     number   value   the median of every node's median, in the row's `metric`
variant               string?  label   a measurement's variant
"""

#: The quantities (a unit each) and the nested objects and lists: in quantities.py.
TABLE += QUANTITIES
