"""The vocabulary's quantities (relative errors, times, sizes, rates, times of day) and its nested objects and
lists, as :mod:`.vocabulary`'s lines."""

QUANTITIES = """
# --- relative errors
relative_error        number   relative_error  (xferlab's or the predicted figure - the reference) / the reference: scenarios against the seed, DecEval against the measured flow, a campaign node against the median over nodes (absolute)
stage_sum_relative_error number relative_error the sum-of-stages baseline's relative error
stage_max_relative_error number relative_error the max-of-stages baseline's relative error
median_relative_error number   relative_error a fit's median error over the measured sizes
worst_relative_error  number   relative_error a fit's largest error at a size
cv_relative_error     number   relative_error the kept model's held-out (cross-validated) error
plain_cv_relative_error number relative_error the plain model's held-out error
packet_cv_relative_error number relative_error the per-packet model's held-out error
piecewise1_cv_relative_error number relative_error the one-break piecewise model's held-out error
piecewise2_cv_relative_error number relative_error the two-break piecewise model's held-out error
held_out_relative_error number relative_error the error at this size when it is left out of the fit
noise_relative_error  number   relative_error the measured median's noise: half its 95 % interval / the median
# --- times
seconds               number   seconds a time
latency_seconds       number   seconds a latency (a model's; the runtime's one-way bus latency; a copy's median at the smallest size)
median_seconds        number   seconds the median time
mean_seconds          number   seconds the mean time (OSU's figure)
min_seconds           number   seconds the shortest time
max_seconds           number   seconds the longest time
sum_seconds           number   seconds the sum of a matrix's cells' times
p99_seconds           number   seconds the 99th-percentile time
median_ci_low_seconds number   seconds the low end of the median time's 95 % interval
median_ci_high_seconds number  seconds the high end of the median time's 95 % interval
device_median_seconds number   seconds the median time on the device's clock
latency_ci_low_seconds number  seconds the low end of the latency's 95 % interval (a copy's median; a fit's bootstrap)
latency_ci_high_seconds number seconds the high end of the latency's 95 % interval
latency_mean_seconds  number   seconds the smallest message's mean latency (OSU)
latency_median_seconds number  seconds the smallest message's or copy's median latency
host_seconds          number   seconds the host's time for the work
device_seconds        number   seconds the device's time for the work
saved_seconds         number   seconds host time - device time
communication_seconds number   seconds the transfers' time
break_even_device_seconds number seconds the longest device time at which offloading still pays
before_seconds        number   seconds the makespan before the replacement
after_seconds         number   seconds the makespan after it
makespan_seconds      number   seconds the workflow's makespan
fast_path_seconds     number   seconds the max-plus fast path's makespan
one_piece_seconds     number   seconds the makespan in one piece (no chunks)
start_seconds         number   seconds when an operation starts
line_seconds          number   seconds one 64-byte line's time on a CXL link, t(64 B): a CXL.cache request's latency
flip_seconds          number   seconds one bias flip of a CXL Type 2 device's region (derived from its link, or given)
access_seconds        number   seconds one device access (64 B) in host bias: a line at the link's request rate
host_bias_seconds     number   seconds the device's accesses between two flips, in host bias
device_bias_seconds   number   seconds the same in device bias: one flip
end_seconds           number   seconds when it ends
busy_seconds          number   seconds how long a resource was busy
device_busy_seconds   number?  seconds the emulated device thread's time computing windows, median over the runs (null: not emulated)
model_communication_seconds number? seconds seed 002's T_lat for the run by the bus as a link: a round trip per wait, the records at its bandwidth (null: not emulated)
use_distance_mean_seconds number? seconds from a result's issue to its first use (a later request's issue, or the host's read), mean
use_distance_median_seconds number? seconds from a result's issue to its first use, median
use_distance_p90_seconds number? seconds from a result's issue to its first use, 90th percentile
use_distance_max_seconds number? seconds from a result's issue to its first use, longest
link_a_seconds        number   seconds link A's time
link_b_seconds        number   seconds link B's time
total_seconds         number   seconds the total time (median)
total_min_seconds     number   seconds the shortest total time
total_max_seconds     number   seconds the longest total time
allocation_seconds    number   seconds allocation time (median)
copy_seconds          number   seconds copy time (median)
kernel_seconds        number   seconds kernel time (median)
dm_seconds            number   seconds data-movement time (median)
transfer_seconds      number   seconds a transfer's time
pipelined_seconds     number   seconds the pipelined flow's time
sync_seconds          number   seconds sync mode's time
transfer_median_seconds number seconds one transfer's median time
transfer_p99_seconds  number   seconds one transfer's 99th-percentile time
transfer_max_seconds  number   seconds one transfer's longest time
idle_latency_seconds  number   seconds the idle latency past the last-level cache
measured_seconds      number   seconds the measured time (median)
predicted_seconds     number   seconds the simulator's prediction
stage_sum_seconds     number   seconds the sum of the stages' times (a naive baseline)
stage_max_seconds     number   seconds the longest stage's time (a naive baseline)
first_touch_median_seconds number seconds a kernel's first touch of fresh shared memory (median)
second_touch_median_seconds number seconds its second touch (median)
fault_per_touch_median_seconds number seconds (first - second) / touches: a page fault's cost (median)
host_back_per_touch_median_seconds number seconds the host reading it back, per touch (median)
packet_overhead_seconds number seconds a per-packet fit's time per packet
packet_overhead_ci_low_seconds number seconds the low end of its 95 % interval
packet_overhead_ci_high_seconds number seconds the high end of its 95 % interval
rank_min_mean_seconds number   seconds the mean time of the fastest rank (OSU's min)
rank_max_mean_seconds number   seconds the mean time of the slowest rank (OSU's max)
compute_mean_seconds  number   seconds a non-blocking collective's compute phase between start and wait, mean over ranks of each rank's mean (OSU's Compute)
pure_mean_seconds     number   seconds a non-blocking collective's pure communication time (start + wait), mean over ranks of each rank's mean (OSU's Pure Comm.)
# --- sizes
size_bytes            number?  bytes   a size: a copy's, an array's, a message's
chunk_bytes           integer? bytes   a chunk's size
total_bytes           integer  bytes   the total moved
at_bytes              integer? bytes   the size the bandwidth was taken at
page_bytes            integer  bytes   the bytes one bias flip covers
min_bytes             integer  bytes   the smallest size searched
max_bytes             integer  bytes   the largest size searched
smallest_bytes        integer  bytes   the smallest size measured
largest_bytes         integer  bytes   the largest size measured
half_bandwidth_bytes  integer? bytes   n½: the smallest size reaching half the peak bandwidth
latency_size_bytes    integer? bytes   the message size of the latency figure
bandwidth_size_bytes  integer? bytes   the message size of the bandwidth figure
llc_bytes             integer? bytes   the last-level cache's size
array_size_bytes      integer  bytes   bytes per array
memory_total_bytes    integer  bytes   the machine's memory
in_bytes              integer  bytes   data the task needs on the device
out_bytes             integer  bytes   results brought back
break_even_bytes      integer? bytes   the smallest size at which offloading pays (null: none)
bytes                 number   bytes   bytes moved
to_device_bytes       integer  bytes   bytes the runtime sent the device
from_device_bytes     integer  bytes   bytes the runtime read back
packet_bytes          integer? bytes   a per-packet fit's packet size
iteration_bytes       integer  bytes   bytes moved in one timed iteration (a window of messages; both ways for bibw)
algorithm_bytes       integer  bytes   a collective's bytes S as nccl-tests counts them (the algorithm bandwidth is S / time)
breakpoints_bytes     array    bytes   a piecewise fit's breakpoints
stride_bytes          integer  bytes   bytes between touches
offset_bytes          integer  bytes   bytes from a page boundary
missed_sizes_bytes    array    bytes   the sizes a poor fit misses
# --- rates
bandwidth_bytes_per_second number bytes_per_second a bandwidth (a model's: size / time)
streaming_bytes_per_second number bytes_per_second size / (time - latency): the rate once the first byte is there
little_bytes_per_second number  bytes_per_second Little's law: requests in flight x 64 B / t_line (no flit limit)
flit_limit_bytes_per_second number bytes_per_second a CXL link's large-transfer rate without a request limit (flits, or the seed's penalty model)
median_bytes_per_second number bytes_per_second the median bandwidth
mean_bytes_per_second number   bytes_per_second the mean bandwidth
min_bytes_per_second  number   bytes_per_second the lowest bandwidth
max_bytes_per_second  number   bytes_per_second the highest bandwidth
sum_bytes_per_second  number?  bytes_per_second the sum of a matrix's measured cells (nvbandwidth's SUM; a device matrix's per direction)
best_bytes_per_second number   bytes_per_second the best bandwidth (STREAM's figure)
reference_best_bytes_per_second number? bytes_per_second the best bandwidth of the reference_mode row (null: none in the run)
median_ci_low_bytes_per_second number bytes_per_second the low end of the median bandwidth's 95 % interval
median_ci_high_bytes_per_second number bytes_per_second the high end of the median bandwidth's 95 % interval
device_median_bytes_per_second number bytes_per_second the median bandwidth on the device's clock
kernel_median_bytes_per_second number? bytes_per_second a copy kernel's median bandwidth, the same device memory and size, counted once
kernel_best_bytes_per_second number? bytes_per_second a copy kernel's best bandwidth, the same device memory and size, counted once
bandwidth_ci_low_bytes_per_second number bytes_per_second the low end of the bandwidth's 95 % interval (a copy's median; a fit's bootstrap)
bandwidth_ci_high_bytes_per_second number bytes_per_second the high end of the bandwidth's 95 % interval
bandwidths_bytes_per_second array bytes_per_second a piecewise fit's bandwidth per segment
bandwidths_ci_low_bytes_per_second array bytes_per_second the low ends of their 95 % intervals
bandwidths_ci_high_bytes_per_second array bytes_per_second the high ends
measured_peak_bytes_per_second number bytes_per_second the best bandwidth measured
model_limit_bytes_per_second number bytes_per_second the link model's peak payload rate
best_flops_per_second number   flops_per_second the best floating-point rate
median_flops_per_second number flops_per_second the median floating-point rate
messages_per_second   number   per_second messages per second (OSU's message rate)
algorithm_mean_bytes_per_second number bytes_per_second a collective's algorithm bandwidth, S / the mean time (nccl-tests' algbw)
algorithm_median_bytes_per_second number bytes_per_second a collective's algorithm bandwidth, S / the median time
bus_mean_bytes_per_second number bytes_per_second a collective's bus bandwidth, algbw x the bus factor (nccl-tests' busbw), of the mean time
bus_median_bytes_per_second number bytes_per_second a collective's bus bandwidth of the median time
bandwidth_mean_bytes_per_second number bytes_per_second the largest message's mean bandwidth (OSU)
bandwidth_median_bytes_per_second number bytes_per_second the largest copy's median bandwidth
device_bandwidth_bytes_per_second number bytes_per_second the largest copy's median bandwidth on the device's clock
peak_bytes_per_second number   bytes_per_second the highest median bandwidth over sizes
hardware_peak_bytes_per_second number bytes_per_second the peak a bandwidth is held against: the link model's payload limit for the copy's size (its PCIe link from sysfs), or the DRAM's channels x MT/s x width (dmidecode); null: unknown or no link (peak_source says why)
direction_median_bytes_per_second number bytes_per_second one direction of a bidirectional copy or bibw: its bytes / the shared window (half the row's sum; median)
write_allocate_median_bytes_per_second number? bytes_per_second loaded latency: the reads for ownership of the lines written with ordinary stores, not in the traffic counted (median over the windows)
direction_mean_bytes_per_second number bytes_per_second one direction of bibw: half OSU's sum (mean)
direction_bandwidth_bytes_per_second number bytes_per_second one direction of a bidirectional copy at the largest size (half the row's sum)
peak_write_bytes_per_second number bytes_per_second a link's peak write bandwidth
peak_read_bytes_per_second number bytes_per_second a link's peak read bandwidth
copy_best_bytes_per_second number bytes_per_second the copy kernel's best bandwidth
mul_best_bytes_per_second number bytes_per_second the mul kernel's best bandwidth
add_best_bytes_per_second number bytes_per_second the add kernel's best bandwidth
triad_best_bytes_per_second number bytes_per_second the triad kernel's best bandwidth
dot_best_bytes_per_second number bytes_per_second the dot kernel's best bandwidth
read_best_bytes_per_second number bytes_per_second the read kernel's best bandwidth
copy_rate_bytes_per_second number bytes_per_second the copy rate of a tier's link view
# --- times of day
started_utc           string   utc     when a run started
finished_utc          string?  utc     when it finished (null: it has not)
# --- nested objects and lists
break_even            array    list    `runtime bench --device-speed LIST`: per workload, mode and latency, the break-even device speed measured beside the model's
accelerators          object   object  accelerators found, per API
align                 array    list    copies at offsets from a page (measure kernels --align)
cpu_nodes             array    list    a memory matrix's rows: the CPU nodes whose CPUs ran the threads
memory_nodes          array    list    a memory matrix's columns: the memory nodes (a CPU-less node is a column only)
matrices              array    list    `measure memory --matrix`: per figure (latency, each bandwidth kernel) its grid and its sum, min and max over the cells
values                array    list    a memory matrix's grid: a list per CPU node (row), a figure per memory node (column), in the unit of its headline (median_seconds or best_bytes_per_second); null: not measured
best_points           array    list    the best point of each system, link and workflow (rows of the sweep)
stopped_points        object   object  points per reason they stopped repeating (fixed, precision …)
buffer_node           object   object  the host buffers' memory node: node, pages found there, binding error
caches                array    list    the CPU caches
candidates            array    list    the links a scenario compares
cpu_flags_persistence array    list    the CPU's cache-flush instructions
cpus_allowed          array    list    CPUs this process may run on
cpus_online           array    list    CPUs online
critical_path         array    list    the operations on the critical path
crossovers            array    list    sizes where the fastest point changes
d2d                   array    list    device-to-device copies (measure kernels --peer)
totals                array    list    per direction of a device matrix: the sum, min and max of its measured cells
device                object?  object  the device: its API, index, name, memory and features
devices               array    list    each accelerator's runs (lab), or record (inventory, per API)
locality              object   object  where an accelerator sits: its PCI address, NUMA node and local CPUs
local_cpus            array    list    the CPUs local to an accelerator (sysfs local_cpulist; empty: none given)
opencl                object   object  the OpenCL devices found, and why none where none
cuda                  object   object  the CUDA devices found, and why none where none
failures              array    list    steps that failed or were skipped, with why
pmdk_overheads        array    list    `measure memory --pmdk`: each PMDK row set against the raw mapping persisted (test, mode, reference_mode, threads, best and reference best, pmdk_overhead, emulated)
faults                array    list    first-touch timings of shared memory (measure kernels --faults)
flows                 array    list    a scenario's flows on other links
hosts                 array    list    each rank's host and CPUs
hugepages             object   object  huge pages: sizes, totals, transparent huge pages' setting
machine_state         object   object  the machine's state at a run's start (NUMA balancing, governor, turbo, THP, SMT, VM, load, clock source) and its warnings
conventions           object   object  the units and the counting rule of each bandwidth the rows show (measure/conventions.py), by the rows' `counting`
peaks                 object   object  what the run's bandwidths are held against, as recorded: its device's link (sysfs), its device's memory (clock and bus width, `measure kernels`), the DRAM (dmidecode) or the network links between its hosts (route and interface speed), with the source or why unknown
imports               array    list    each shard imported: its run, its samples, whether it was new
failed_nodes          array    list    the nodes that failed, with why
links                 object   object  each link's full parameters, by label
memory_summary        object   object  the lab's memory stage: bandwidth, latency, loaded latency, what was skipped
mpi                   object   object  the MPI library and its setup
numa_nodes            array    list    the memory nodes: CPUs, memory, distances
options               object   object  the options a study ran with
overview              array    list    the command's headline figures, a row per group
plots                 array    list    the plot files written
pmem_devices          array    list    persistent memory devices
cxl                   object   object  the CXL memory devices, decoders and regions (/sys/bus/cxl), each region with the NUMA nodes it backs; present false with the reason where there is no CXL bus
pmem                  object   object  the persistent-memory regions and namespaces (ndctl list) and DAX devices (daxctl list: devdax, or system-ram for KMEM-DAX), with why a tool gave none
probe                 object   object  the probe's clock: tick and call overhead
profiles              array    list    the link profiles saved
ranking_changes       array    list    sizes where the fastest link changes
resources             array    list    each resource's busy time and use
run                   object   object  a run as the store holds it
runs                  array    list    the runs made
scaling               array    list    the work-group and instance scaling table (measure kernels --scaling)
skipped               array    list    what was skipped and why
steps                 array    list    a study's steps: key, label, run and status
sweep                 array    list    a scenario's sweep over sizes or chunks
tiers                 array    list    the tier profiles fitted
per_size              array    list    a fit's error and the noise at each size
failed_stages         array    list    the lab's stages that failed, with why
failure               string?  label   why a study step failed or was not run
"""
