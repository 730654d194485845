"""Each command's ``--json`` output as field names of the vocabulary (:mod:`.vocabulary`): ``rows`` (every
result row), ``top`` (the object's other fields) and ``nested`` (the fields of the objects in a list or
object field, where they are declared); ``?`` after a name: it may be absent. Keyed by the ``command``
field of the printed object (``scenario run`` covers ``scenario run NAME``)."""

MEASURED = "run_id store machine_state failures unvalidated_samples plots?"
STUDY = "group skipped steps options"
STEPS = {"steps": "key label run_id status failure", "skipped": "class reason"}
SCENARIO = "figure kind? section compute? candidate? size_bytes? seed seed_high? xferlab unit relative_error tolerance basis status status_reason note"
POINT = "system link workflow strategy chunk_bytes makespan_seconds speedup best error"
KERNELS = ("copy", "mul", "add", "triad", "dot", "read")  # BabelStream's, and read
STATS_SECONDS = "count headline median_seconds min_seconds? max_seconds? mean_seconds? p99_seconds? cov"

SHAPES = {
    "advise bias": dict(
        rows="accesses host_bias_seconds device_bias_seconds pays",
        top="link flip_seconds access_seconds page_bytes break_even_accesses"),
    "advise chunk": dict(
        rows="chunk_bytes makespan_seconds",
        top="system workflow total_bytes chunk_bytes chunks makespan_seconds one_piece_seconds evaluations"),
    "advise links": dict(
        rows="size_bytes fastest seconds runner_up? runner_up_ratio?",
        top="ranking_changes op"),
    "advise offload": dict(
        rows="link in_bytes out_bytes host_seconds device_seconds saved_seconds communication_seconds p_over_o pays "
             "speedup break_even_device_seconds break_even_bytes?",
        top="op links"),
    "advise whatif": dict(rows="system replaced by strategy before_seconds after_seconds speedup"),
    "campaign run": dict(
        rows="suite test metric size_bytes threads memory_node mode host_kind kernel_args delay pair path variant "
             "array_size_class placement statistic node median median_over_nodes mads relative_error outlier",
        top="runs imports failed_nodes",
        nested={"imports": "shard run_id samples imported"}),
    "fit": dict(
        rows="direction? host_kind? pair? path? buffer? model? description? latency_seconds? latency_ci_low_seconds? "
             "latency_ci_high_seconds? bandwidth_bytes_per_second? bandwidth_ci_low_bytes_per_second? "
             "bandwidth_ci_high_bytes_per_second? breakpoints_bytes? bandwidths_bytes_per_second? "
             "bandwidths_ci_low_bytes_per_second? bandwidths_ci_high_bytes_per_second? packet_bytes? "
             "packet_overhead_seconds? packet_overhead_ci_low_seconds? packet_overhead_ci_high_seconds? r2_log? "
             "median_relative_error? worst_relative_error? cv_relative_error? plain_cv_relative_error? "
             "packet_cv_relative_error? piecewise1_cv_relative_error? piecewise2_cv_relative_error? "
             "bootstrap_resamples? points? sizes? poor? poor_cause? missed_sizes_bytes? per_size? "
             "measured_peak_bytes_per_second? against? model_limit_op? model_limit_bytes_per_second? "
             "fraction_of_model_limit? profile? plot? tier? node? mode? idle_latency_seconds? copy_rate_bytes_per_second? "
             "loaded_points? kernel? threads? best_bytes_per_second? median_bytes_per_second? iterations? "
             "array_size_bytes? array_size_class?",
        top="run_id against? skipped? unvalidated_samples? tiers? profiles?",
        nested={"skipped": "group reason", "per_size": "size_bytes held_out_relative_error noise_relative_error"}),
    "inventory": dict(
        rows="hostname node cpu_model cpu_vendor architecture hypervisor cpus_online cpus_allowed cores threads "
             "caches numa_nodes cxl pmem memory_total_bytes hugepages frequency_governor kernel os pmem_devices "
             "cpu_flags_persistence machine_state accelerators",
        # per API its devices, each device's record (its API's fields) with where it sits (system/locality.py)
        nested={"accelerators": "opencl? cuda? ...", "opencl": "devices ...", "cuda": "devices ...",
                "devices": "locality ...", "locality": "pci_bus_id numa_node local_cpus source note"}),
    "lab": dict(
        rows="scenario figure seed xferlab unit status status_reason",
        top="folder report probe devices memory_summary run_id store profiles profiles_folder previous_profiles "
            "failed_stages exit_code"),
    "measure collab": dict(
        rows="pattern version count headline total_seconds mean_seconds median_seconds median_ci_low_seconds "
             "median_ci_high_seconds total_cov total_min_seconds total_max_seconds "
             "allocation_seconds copy_seconds kernel_seconds dm_seconds device_share host_threads atomics_path? groups? groups_rule? "
             "allocation_normalized? copy_normalized? kernel_normalized? dm_normalized? total_normalized? "
             "speedup_vs_d?",
        top=f"{MEASURED} device"),
    "measure device": dict(
        rows=f"test host_kind? direction? size_bytes? chunk_bytes? transfers? total_bytes? backend? kernel_args? pinned_cpu? "
             "relative_to_opencl? "
             f"{STATS_SECONDS} median_bytes_per_second? best_bytes_per_second? device_median_seconds? "
             "device_median_bytes_per_second? median_ci_low_seconds median_ci_high_seconds "
             "median_ci_low_bytes_per_second? median_ci_high_bytes_per_second? transfer_median_seconds? "
             "transfer_p99_seconds? transfer_max_seconds? stopped "
             "counting? direction_median_bytes_per_second? hardware_peak_bytes_per_second? fraction_of_peak? peak_source?",
        top=f"{MEASURED} device overview conventions peaks",
        nested={"overview": "host_kind direction smallest_bytes latency_seconds largest_bytes latency_ci_low_seconds "
                            "latency_ci_high_seconds bandwidth_bytes_per_second bandwidth_ci_low_bytes_per_second "
                            "bandwidth_ci_high_bytes_per_second peak_bytes_per_second half_bandwidth_bytes "
                            "stopped_points device_bandwidth_bytes_per_second "
                            "counting direction_bandwidth_bytes_per_second? hardware_peak_bytes_per_second fraction_of_peak "
                            "peak_source"}),
    "measure device --matrix": dict(
        rows="direction src dst src_device dst_device host_kind size_bytes path status reason? count? headline? "
             "median_seconds? median_bytes_per_second? best_bytes_per_second? median_ci_low_bytes_per_second? "
             "median_ci_high_bytes_per_second? kernel_median_bytes_per_second? kernel_best_bytes_per_second? "
             "hardware_peak_bytes_per_second fraction_of_peak peak_source",
        top=f"{MEASURED} devices totals conventions peaks",
        nested={"totals": "direction sum_bytes_per_second? min_bytes_per_second? max_bytes_per_second? measured_cells "
                          "na_cells"}),
    "measure kernels": dict(
        rows="kernel memory type width groups local instances size_bytes count headline best_bytes_per_second "
             "median_bytes_per_second median_seconds min_seconds cov median_ci_low_bytes_per_second "
             "median_ci_high_bytes_per_second llc_bytes array_size_class rows? nnz? best_flops_per_second? "
             "median_flops_per_second? hardware_peak_bytes_per_second? fraction_of_peak? peak_source?",
        top=f"{MEASURED} device scaling faults align d2d overview conventions peaks",
        nested={"overview": "memory size_bytes statistic array_size_class llc_bytes "
                            + " ".join(f"{k}_best_bytes_per_second? {k}_at?" for k in KERNELS),
                "faults": "memory stride_bytes touches size_bytes count headline first_touch_median_seconds "
                          "second_touch_median_seconds fault_per_touch_median_seconds host_back_per_touch_median_seconds",
                "align": "allocator offset_bytes direction size_bytes count headline median_bytes_per_second "
                         "best_bytes_per_second relative_to_runtime_aligned hardware_peak_bytes_per_second "
                         "fraction_of_peak peak_source",
                "d2d": "path size_bytes device_index peer_index count headline median_bytes_per_second "
                       "best_bytes_per_second median_seconds hardware_peak_bytes_per_second fraction_of_peak peak_source",
                "scaling": "kernel memory type width groups instances best_bytes_per_second speedup_vs_fewest_groups "
                           "speedup_vs_one_instance"}),
    "measure memory": dict(
        rows="test node mode? threads? size_bytes? cpus? headline? count? cov? min_bytes_per_second? "
             "median_bytes_per_second? mean_bytes_per_second? max_bytes_per_second? best_bytes_per_second? "
             "median_ci_low_bytes_per_second? median_ci_high_bytes_per_second? min_seconds? median_seconds? "
             "mean_seconds? max_seconds? median_ci_low_seconds? median_ci_high_seconds? stopped? array_size_class? delay? "
             "mix? traffic_threads? write_allocate_median_bytes_per_second? "
             "counting? hardware_peak_bytes_per_second? fraction_of_peak? peak_source? cpu_node? memory_node? "
             "emulated? reference_mode? reference_best_bytes_per_second? pmdk_overhead?",
        top=f"{MEASURED} conventions peaks matrices? pmdk_overheads?",
        nested={"matrices": "test headline cpu_nodes memory_nodes values count sum_seconds? min_seconds? max_seconds? "
                            "sum_bytes_per_second? min_bytes_per_second? max_bytes_per_second?",
                "pmdk_overheads": "test mode reference_mode threads size_bytes best_bytes_per_second "
                                  "reference_best_bytes_per_second pmdk_overhead emulated"}),
    "measure network": dict(
        rows="test size_bytes pair buffer path count headline mean_seconds median_seconds min_seconds max_seconds cov "
             "median_ci_low_seconds median_ci_high_seconds iteration_bytes? mean_bytes_per_second? "
             "median_bytes_per_second? best_bytes_per_second? median_ci_low_bytes_per_second? "
             "median_ci_high_bytes_per_second? messages_per_second? ranks? rank_min_mean_seconds? "
             "rank_max_mean_seconds? algorithm_bytes? bus_factor? algorithm_mean_bytes_per_second? "
             "algorithm_median_bytes_per_second? bus_mean_bytes_per_second? bus_median_bytes_per_second? "
             "compute_mean_seconds? pure_mean_seconds? overlap? rma_sync? rma_window? buffers? pair_hosts? "
             "counting direction_mean_bytes_per_second? direction_median_bytes_per_second? hardware_peak_bytes_per_second? "
             "fraction_of_peak? peak_source?",
        top=f"{MEASURED} overview mpi? hosts? device? buffer_node? points_skipped? conventions peaks",
        nested={"overview": "pair path latency_size_bytes latency_mean_seconds latency_median_seconds "
                            "bandwidth_size_bytes bandwidth_mean_bytes_per_second best_bytes_per_second",
                "hosts": "rank host cpus"}),
    "model chunks": dict(
        rows="link chunk_bytes transfers seconds bandwidth_bytes_per_second",
        top="total_bytes op links"),
    "model compare": dict(
        rows="size_bytes link_a_seconds link_b_seconds time_ratio faster",
        top="link_a link_b op links"),
    "model crossover": dict(
        rows="size_bytes faster_below faster_above seconds",
        top="link_a link_b op min_bytes max_bytes links"),
    "model presets": dict(
        rows="name kind peak_write_bytes_per_second peak_read_bytes_per_second latency_seconds description source"),
    "model requests": dict(
        rows="link op outstanding line_seconds little_bytes_per_second flit_limit_bytes_per_second "
             "bandwidth_bytes_per_second limited_by",
        top="op links"),
    "model show": dict(rows="field value what", top="link source"),
    "model time": dict(
        rows="link op size_bytes seconds bandwidth_bytes_per_second streaming_bytes_per_second",
        top="op links"),
    "results import": dict(rows="shard run_id samples imported"),
    "results list": dict(
        rows="run_id started_utc finished_utc command status samples failure_count incomplete",
        top="store"),
    "results show": dict(
        rows="suite test metric size_bytes threads node mode host_kind kernel_args delay pair path variant count "
             "warmups unvalidated min median mean max cov median_ci_low median_ci_high",
        top="run failures store"),
    "runtime bench": dict(
        rows="backend latency_seconds workload opset problem_size mode seconds host_seconds ok repeats requests windows "
             "bus_transactions lines_written coalesced_lines lines_read result_reads waits forwarded drains "
             "flushes_for_dependency to_device_bytes from_device_bytes counted_records counted_doorbells "
             "counted_lines_received counted_read_requests counted_lines_sent counted_values_sent "
             "counted_status_reads counted_forwarded counted_kept counted_transactions speedup_over_sync "
             "transactions_saved counted_saved device_seconds p_over_o device_speed work_rounds device_rounds "
             "device_busy_seconds measured_device_speed pays model_communication_seconds break_even_speed",
        top="run_id store machine_state break_even?",
        nested={"break_even": "workload mode latency_seconds measured_break_even_speed break_even_speed"}),
    "scenario list": dict(rows="name seed_document kind title source"),
    "scenario run": dict(
        rows=SCENARIO,
        top="scenario op? baseline? candidates? sweep? flows?",
        nested={"sweep": "link size_bytes? seconds? time_ratio? chunk_bytes? chunks? transfer_seconds? "
                         "pipelined_seconds?",
                "flows": "link flow seconds speedup"}),
    "simulate run": dict(  # the engine's timeline; past its chunks, one row of the fast path (makespan_seconds, chunks)
        rows="op? resource? kind? start_seconds? end_seconds? size_bytes? makespan_seconds? chunks?",
        top="strategy makespan_seconds critical_path? resources? fast_path_seconds? chunks? bias? flips?",
        nested={"resources": "resource busy_seconds utilization bytes ops"}),
    "simulate sweep": dict(rows="chunk_bytes chunks makespan_seconds"),
    "study run characterize": dict(
        rows="part what latency_median_seconds? latency_mean_seconds? bandwidth_median_bytes_per_second? "
             "bandwidth_mean_bytes_per_second? at_bytes? total_seconds? relative_to_d?",
        top=STUDY, nested=STEPS),
    "study run deceval": dict(
        rows="configuration evaluations device_share part flow chunk_bytes chunks measured_seconds "
             "median_ci_low_seconds median_ci_high_seconds min_seconds count held_out? predicted_seconds? "
             "stage_sum_seconds? stage_max_seconds? relative_error? stage_sum_relative_error? "
             "stage_max_relative_error?",
        top=STUDY, nested=STEPS),
    "study run granularity": dict(
        rows="host_kind direction chunk_bytes transfers total_bytes count headline median_seconds max_seconds "
             "median_bytes_per_second cov transfer_median_seconds transfer_p99_seconds transfer_max_seconds "
             "median_ci_low_seconds median_ci_high_seconds median_ci_low_bytes_per_second "
             "median_ci_high_bytes_per_second stopped relative_to_largest_chunk",
        top=STUDY, nested=STEPS),
    "study run launch": dict(
        rows="where kernel_args median_seconds p99_seconds count governor best_cpu? spread_across_cpus? p99_over_best_cpu? jitter?",
        top=STUDY, nested=STEPS),
    "study list": dict(rows="study seed_document experiment"),
    "study run offload": dict(
        rows="workload requests? recent_operand_share? level_width_mean? level_width_median? level_width_p90? "
             "level_width_max? ideal_parallelism? host_read_share? unused_share? use_distance_median? "
             "use_distance_p90? use_distance_max? window? use_distance_mean_seconds? use_distance_median_seconds? "
             "use_distance_p90_seconds? use_distance_max_seconds? device_speed? latency_seconds? sync_seconds? "
             "parallel_speedup? forward_speedup? forward_transactions_saved? forward_counted_saved? sync_p_over_o? "
             "parallel_p_over_o? forward_p_over_o? sync_pays? parallel_pays? forward_pays? forward_break_even_speed?",
        top=STUDY, nested=STEPS),
    "study run tiers": dict(
        rows="class kernel statistic placement threads size_bytes array_size_class best_bytes_per_second "
             "relative_to_local",
        top=STUDY, nested=STEPS),
    "sweep run": dict(
        rows=POINT,
        top="run_id group where evaluated reused failed best_points crossovers",
        nested={"best_points": POINT}),
}
SHAPES["measure launch"] = SHAPES["measure device"]  # one printer: copies, launches and chunks, as measure device
