import pytest

from xferlab.advise.offload import break_even_bytes, offload
from xferlab.links.simple import SimpleLink

LINK = SimpleLink(bandwidth=1e9, latency=1e-6)


def test_rule_t_minus_t_prime_greater_than_2d():
    # d = 1 us + 1 ms for 1 MB: 2d = 2.002 ms.
    v = offload(LINK, 1e6, 1e6, host_seconds=0.010, device_seconds=0.007)
    assert v.communication_seconds == pytest.approx(2 * 1.001e-3)
    assert v.pays and v.p_over_o == pytest.approx(0.003 / 0.002002)
    assert not offload(LINK, 1e6, 1e6, 0.010, 0.008).pays  # saves 2 ms < 2.002 ms


def test_p_over_o_above_one_iff_rule_holds():
    for device in (0.001, 0.005, 0.00799, 0.00801, 0.009):
        v = offload(LINK, 1e6, 1e6, 0.010, device)
        assert v.pays == (v.p_over_o > 1)


def test_break_even_size():
    n = break_even_bytes(LINK, saved_seconds=0.0030005007)
    # 2 (1 us + n / 1 GB/s) < 3.0005007 ms  <=>  n < 1,499,250.35 B
    assert n == 1_499_250
    assert break_even_bytes(LINK, saved_seconds=1e-6) == 0


def test_negative_times_rejected():
    with pytest.raises(ValueError, match="non-negative"):
        offload(LINK, 1, 1, -1.0, 0.0)


# Hand-computed examples from the seeds.

def test_seed_000_rule_by_hand_over_pcie_and_cxl(cli):
    # Seed 000: t_pcie = n / b_n + t_s, t_s = 738.77 ns, b_n = 12.46 GB/s (pcie-model, Gen3 x16 read+write);
    # t_cxl = n / (b_n x 0.6) + 40 ns. For n = 4 KiB:
    #   d_pcie = 4096 / 12.46e9 + 738.77e-9 = 328.73 ns + 738.77 ns = 1067.50 ns, 2d = 2135.0 ns
    #   d_cxl  = 4096 / 7.476e9 + 40e-9    = 547.89 ns + 40 ns     =  587.89 ns, 2d = 1175.8 ns
    # A task that saves t - t' = 2 us: over PCIe 2 < 2.135 us, no (P/O = 0.937); over CXL 2 > 1.176 us, yes (1.701).
    pcie = cli.json("advise", "offload", "pcie3x16", "--op", "readwrite", "--bytes", "4096", "--host-time", "5us",
                    "--device-time", "3us")["results"][0]
    cxl = cli.json("advise", "offload", "cxl-seed", "--op", "readwrite", "--bytes", "4096", "--host-time", "5us",
                   "--device-time", "3us")["results"][0]
    assert pcie["communication_seconds"] == pytest.approx(2135.0e-9, rel=1e-3) and not pcie["pays"]
    assert pcie["p_over_o"] == pytest.approx(2.0 / 2.135, rel=1e-3)
    assert cxl["communication_seconds"] == pytest.approx(1175.8e-9, rel=1e-3) and cxl["pays"]
    assert cxl["p_over_o"] == pytest.approx(2.0 / 1.1758, rel=1e-3)
    # t - 2d: the slowest device time that still pays, 5 us - 2.135 us.
    assert pcie["break_even_device_seconds"] == pytest.approx(5e-6 - 2135.0e-9, rel=1e-3)


def test_seed_002_p_over_o_with_a_1000_ns_round_trip(cli):
    # Seed 002 (Zipper): P/O = (T_cpu - T_acc) / T_lat with T_lat ~ 1000 ns a round trip (500 ns each way,
    # 8-byte operands whose wire time is negligible here). T_cpu = 2.5 us, T_acc = 0.5 us: P/O = 2.0, beneficial;
    # T_cpu = 1.2 us, T_acc = 0.4 us: P/O = 0.8, not beneficial.
    link = "simple:bandwidth=1PB/s,latency=500ns"
    yes = cli.json("advise", "offload", link, "--bytes", "8", "--host-time", "2.5us", "--device-time", "0.5us")["results"][0]
    no = cli.json("advise", "offload", link, "--bytes", "8", "--host-time", "1.2us", "--device-time", "0.4us")["results"][0]
    assert yes["p_over_o"] == pytest.approx(2.0, rel=1e-6) and yes["pays"]
    assert no["p_over_o"] == pytest.approx(0.8, rel=1e-6) and not no["pays"]


def test_throughputs_give_the_smallest_input_that_pays(cli):
    # Host 1 GB/s, device 10 GB/s: saving 0.9 ns per byte; a 1 GB/s, 1 us link costs 2 us + 2 ns per byte
    # both ways, which a saving of 0.9 ns per byte never covers; at 100 GB/s (0.02 ns per byte both ways) it pays
    # from n with 0.9 n - 0.02 n > 2000 ns, n > 2272.7 B.
    never = cli.json("advise", "offload", "simple:bandwidth=1GB/s,latency=1us", "--bytes", "1MiB", "--host-rate",
                     "1GB/s", "--device-rate", "10GB/s")["results"][0]
    fast = cli.json("advise", "offload", "simple:bandwidth=100GB/s,latency=1us", "--bytes", "1MiB", "--host-rate",
                    "1GB/s", "--device-rate", "10GB/s")["results"][0]
    assert never["break_even_bytes"] is None
    assert fast["break_even_bytes"] == 2273


@pytest.mark.parametrize("args, message", [
    (["--host-time", "5ms"], "exactly one of --device-time and --device-rate"),            # one side missing
    (["--host-time", "5ms", "--host-rate", "1GB/s", "--device-time", "1ms"], "exactly one of --host-time"),  # both forms
    (["--host-time", "5ms", "--device-rate", "1GB/s"], "both sides as times"),             # mixed forms
    (["--host-rate", "0GB/s", "--device-rate", "1GB/s"], "--host-rate"),                   # zero rate
])
def test_offload_bad_task_description(cli, args, message):
    code, out, err = cli("advise", "offload", "pcie3x16", "--bytes", "1MiB", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
