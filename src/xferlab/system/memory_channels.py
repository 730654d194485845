"""Memory-channel presets: the peak of DDR4, DDR5 and HBM2 channels from their standards, for the
seeds' figures that hold a STREAM result against memory (seed 003's tiers, seed 004's HBM2 ports).

A channel's peak is transfers per second x the channel's data width in bytes (:func:`channel_peak`, the
formula :func:`xferlab.system.peaks.dram_peak` applies to the DIMMs dmidecode lists):

* **DDR4** (JEDEC JESD79-4, speed bins DDR4-1600 to DDR4-3200): a 64-bit channel, 8 bytes per
  transfer; DDR4-2666 x 8 B = 21.3 GB/s.
* **DDR5** (JEDEC JESD79-5, DDR5-4800 its first bin above 4400): a DIMM carries two independent 32-bit
  subchannels, 64 bits per channel together (ECC bits not counted); DDR5-4800 x 8 B = 38.4 GB/s.
* **HBM2** (JEDEC JESD235A): a stack has 8 channels of 128 bits; in pseudo-channel mode each channel
  is two 64-bit pseudo-channels, 16 per stack, each its own port; up to 2.0 Gb/s per pin. The preset
  ``hbm2-2000`` is one pseudo-channel at that rate: 16 GB/s, x 16 x 2 stacks = 512 GB/s, the HBM2
  bandwidth Intel gives for a Stratix 10 MX device (Intel Stratix 10 MX (DRAM System-in-Package)
  Device Overview, ID 683149, section 1.1: "up to 512 Gigabyte/s of 3D stacked HBM2", two stacks).

A preset is the interface's peak, never a sustained figure: what a kernel reaches is a measurement
(``xferlab measure memory``, ``measure kernels``) or, for another machine's, the seed's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnknownName, suggest


@dataclass(frozen=True)
class Channel:
    """One memory channel's interface: its transfer rate and data width, and where they come from."""

    name: str
    mt_per_second: float  # million transfers per second (MT/s), per pin
    width_bytes: float  # data bytes per transfer, ECC not counted
    source: str

    def peak(self, channels: float = 1, mt_per_second: float | None = None) -> float:
        """Bytes per second of ``channels`` such channels (at ``mt_per_second`` where given)."""
        return channel_peak(channels, mt_per_second or self.mt_per_second, self.width_bytes)


def channel_peak(channels: float, mt_per_second: float, width_bytes: float) -> float:
    """Peak bytes per second of ``channels`` channels: channels x MT/s x 10^6 x data bytes per transfer."""
    return channels * mt_per_second * 1e6 * width_bytes


CHANNELS: dict[str, Channel] = {c.name: c for c in (
    Channel("ddr4-2666", 2666, 8, "JEDEC JESD79-4 (DDR4), 64-bit channel"),
    Channel("ddr4-2933", 2933, 8, "JEDEC JESD79-4 (DDR4), 64-bit channel"),
    Channel("ddr4-3200", 3200, 8, "JEDEC JESD79-4 (DDR4), 64-bit channel"),
    Channel("ddr5-4800", 4800, 8, "JEDEC JESD79-5 (DDR5), two 32-bit subchannels per channel"),
    Channel("ddr5-5600", 5600, 8, "JEDEC JESD79-5 (DDR5), two 32-bit subchannels per channel"),
    Channel("hbm2-2000", 2000, 8, "JEDEC JESD235A (HBM2), one 64-bit pseudo-channel at 2.0 Gb/s per pin; "
            "Intel Stratix 10 MX Device Overview (683149) 1.1: 512 GB/s over 2 stacks"),
)}


def channel(name: str) -> Channel:
    """The preset ``name``; an unknown name is refused with the presets there are."""
    found = CHANNELS.get(name)
    if found is None:
        raise UnknownName(f"memory channel '{name}' is not a preset; {suggest(name, list(CHANNELS))}")
    return found
