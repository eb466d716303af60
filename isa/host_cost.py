"""The host's cycles per command (HardwareConfig.host_cmd_cycles), derived from the code that issues it.

Placeholder while the derivation is written: see the README, "The SoC model".
"""
from __future__ import annotations

HOST_CMD_CYCLES = 8
