"""Hardware configuration of the accelerator: one frozen, hashable record.

Every field that shapes the hardware lives here; the RTL is parameterized by
them, the lowering sizes tiles by them, and their hash keys build caches and
tuning records.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from . import host_cost


_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class ConfigError(ValueError):
    """A hardware configuration field is missing, unknown or out of range."""


# Upper bounds that keep every field inside the widths it travels through: the program
# file and the harness hold each field as a u32, the RTL parameters are 32-bit ints, and
# an mvin's column count (dim x max_block_len) is a 16-bit field. Beyond these a config
# would fail late, as a compiler error or a struct.error, instead of here.
LIMITS: dict[str, int] = {
    "dim": 64, "sp_kib": 1 << 20, "sp_banks": 1 << 10, "acc_kib": 1 << 20, "acc_banks": 1 << 10,
    "dma_beat_bytes": 1 << 12, "max_block_len": 64, "dram_latency": 1 << 20,
    "ld_queue": 64, "ex_queue": 64, "st_queue": 64, "dma_inflight": 1 << 10,
    "norm_stats": 256, "host_cmd_cycles": 1 << 16, "rocc_queue": 1 << 10, "rocc_latency": 1 << 10, "l2_kib": 1 << 16, "l2_ways": 64,
    "l2_hit_cycles": 1 << 10, "l2_mshrs": 64, "mem_beat_bytes": 64, "dram_inflight": 1 << 10,
}


# Which dataflows the execute unit has (Gemmini's `dataflow` parameter: OS, WS or BOTH), and the
# number each set travels as in a program file and the RTL's DATAFLOWS parameter (bit 0 OS, bit 1 WS).
DATAFLOW_SETS: dict[str, int] = {"os": 1, "ws": 2, "both": 3}


# on/off fields (bool; a program file and the RTL parameters carry them as 0 or 1)
FLAGS: tuple[str, ...] = ("store_requant", "store_col_scales", "l2_warm")

# The SoC's timing (docs/concepts/soc.md): fields that no RTL parameter holds. The harness takes
# them from the program file at run time, so one build of the RTL serves every value of them.
TIMING: tuple[str, ...] = ("dram_latency", "dma_inflight", "host_cmd_cycles", "rocc_queue", "rocc_latency",
                           "l2_kib", "l2_ways", "l2_hit_cycles", "l2_mshrs", "mem_beat_bytes", "dram_inflight",
                           "l2_warm")

# fields that may be 0: no host cost (free issue), no L2 (the ideal DRAM port), no queue latency
ZERO_OK: tuple[str, ...] = ("host_cmd_cycles", "l2_kib", "rocc_latency", "norm_stats")

# The FireSim SoC's values of the timing fields (each one's source in docs/concepts/soc.md):
# the HardwareConfig defaults, whence the host's cost is derived.
SOC: dict[str, int] = {"dram_latency": 30, "rocc_queue": 10, "rocc_latency": 5, "l2_kib": 512, "l2_ways": 8,
                       "l2_hit_cycles": 4, "l2_mshrs": 10, "mem_beat_bytes": 8, "dram_inflight": 16}
HOST_CMD_CYCLES = host_cost.cmd_cycles(l2_hit_cycles=SOC["l2_hit_cycles"], dram_latency=SOC["dram_latency"],
                                       mem_beat_bytes=SOC["mem_beat_bytes"])

# fields left out of the config hash at these values (see HardwareConfig.config_hash): the SoC's at the
# accelerator alone (free issue, no L2) and its other fields at the FireSim SoC's values
_UNHASHED_DEFAULTS: dict[str, object] = {
    "dataflows": "both", "store_requant": False, "store_col_scales": False, "host_cmd_cycles": 0, "l2_kib": 0,
    "l2_warm": False, "norm_stats": 4, **{k: v for k, v in SOC.items() if k not in ("dram_latency", "l2_kib")}}


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


# fields that are powers of two, each with its least value
POW2: dict[str, int] = {"dim": 1, "sp_banks": 1, "acc_banks": 1, "dma_beat_bytes": 4, "mem_beat_bytes": 1}


def check_field(name: str, value: Any) -> None:
    """Raise ConfigError when no HardwareConfig can have ``value`` as its field ``name``, whatever its
    other fields (the checks that need several fields are HardwareConfig's own)."""
    if name == "name":
        if not isinstance(value, str) or not _NAME.fullmatch(value):
            raise ConfigError(f"HardwareConfig.name={value!r} must match [A-Za-z0-9_.-]+ "
                              "(it is written unquoted in assembly)")
    elif name in FLAGS:
        if not isinstance(value, bool):
            raise ConfigError(f"HardwareConfig.{name} must be true or false, got {value!r}")
    elif name == "dataflows":
        if value not in DATAFLOW_SETS:
            raise ConfigError(f"HardwareConfig.dataflows={value!r} must be one of {list(DATAFLOW_SETS)}")
    elif name not in LIMITS:
        raise ConfigError(f"{name!r} is no HardwareConfig field")
    else:
        least = 0 if name in ZERO_OK else 1
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ConfigError(f"HardwareConfig.{name} must be a {'non-negative' if least == 0 else 'positive'} "
                              f"integer, got {value!r}")
        if value > LIMITS[name]:
            raise ConfigError(f"HardwareConfig.{name}={value} is above its limit of {LIMITS[name]}")
        if name in POW2 and (not _is_pow2(value) or value < POW2[name]):
            raise ConfigError(f"HardwareConfig.{name} must be a power of two from {POW2[name]} to "
                              f"{LIMITS[name]}, got {value}")


@dataclass(frozen=True)
class HardwareConfig:
    """Sizes of one Gemmini-style accelerator instance.

    Scratchpad rows hold ``dim`` int8 values, accumulator rows ``dim`` int32
    values; a local address names one row.
    """

    name: str = "custom"
    dim: int = 16
    sp_kib: int = 256
    sp_banks: int = 4
    acc_kib: int = 64
    acc_banks: int = 2
    dma_beat_bytes: int = 16
    max_block_len: int = 4
    # DRAM's latency in cycles: FASED's latency-bandwidth pipe on the SoC; without an L2, the ideal port's
    dram_latency: int = SOC["dram_latency"]
    ld_queue: int = 8
    ex_queue: int = 16
    st_queue: int = 4
    # DMA reads (and, apart, writes) in flight: Gemmini's max_in_flight_mem_reqs (16 in its
    # default config, ucb-bar/gemmini 641fefb src/main/scala/gemmini/Configs.scala).
    dma_inflight: int = 16
    # the dataflows config_ex may choose at run time; Gemmini's default config has both
    dataflows: str = "both"
    # The store unit's requantization extension (not in Gemmini): config_st's output offset (a zero point)
    # added after the scale's rounding, and its uint8 clip ([0, 255] instead of [-128, 127]).
    store_requant: bool = False
    # The store unit's column-scale extension (not in Gemmini): a register of dim float32 scales, one per column
    # of the row it stores, loaded by config_st_scales words and used instead of config_st's one scale
    # (per-output-channel requantization).
    store_col_scales: bool = False
    # The normalization unit (Gemmini's Normalizer, isa.norm): its stat ids, each a row's statistics; 0, none.
    # Gemmini's Scratchpad builds 2 (641fefb) and LOOP_WS uses 2; gemmini.h's tests at NORM_STAT_IDS=4 need 4.
    norm_stats: int = 4
    # ---- the SoC around the accelerator: timing only (TIMING), each value's source in
    # docs/concepts/soc.md. host_cmd_cycles 0 with l2_kib 0 is the accelerator alone.

    # the host's cycles per command, derived from the code prog.to_c exports (isa/host_cost.py)
    host_cmd_cycles: int = HOST_CMD_CYCLES
    rocc_queue: int = SOC["rocc_queue"]          # entries of the queues between the core and the accelerator
    rocc_latency: int = SOC["rocc_latency"]      # cycles through them
    l2_kib: int = SOC["l2_kib"]                  # sifive InclusiveCache, chipyard's WithInclusiveCache
    l2_ways: int = SOC["l2_ways"]
    l2_hit_cycles: int = SOC["l2_hit_cycles"]    # a request at the L2 to its data (or its miss) out
    l2_mshrs: int = SOC["l2_mshrs"]              # misses in flight
    mem_beat_bytes: int = SOC["mem_beat_bytes"]  # the memory bus: bytes a cycle in each direction
    dram_inflight: int = SOC["dram_inflight"]    # FASED's maxReads and maxWrites
    l2_warm: bool = False   # the inputs sit in the L2 when a program starts, as if the core had just written them

    def __post_init__(self) -> None:
        for f in fields(self):
            check_field(f.name, getattr(self, f.name))
        for memory, rows, banks in (("sp", self.sp_rows, self.sp_banks), ("acc", self.acc_rows, self.acc_banks)):
            says = f"HardwareConfig.{memory}_kib={getattr(self, f'{memory}_kib')} gives {rows} rows"
            if rows % banks or rows < banks * self.dim:
                raise ConfigError(f"{says}, which do not split into {banks} banks of at least dim={self.dim} rows")
            if rows % (2 * self.dim):   # the double buffers' halves; the RTL's loop units are built on them
                raise ConfigError(f"{says}, which do not split into two halves of whole dim={self.dim}-row blocks")
        if self.sp_rows >= 1 << 26 or self.acc_rows >= 1 << 26:
            raise ConfigError("HardwareConfig memories exceed the 26-bit row field of a local address")
        self._check_soc()

    def _check_soc(self) -> None:
        if self.l2_kib and (self.l2_kib * 1024) % (64 * self.l2_ways):
            raise ConfigError(f"HardwareConfig.l2_kib={self.l2_kib} does not split into l2_ways={self.l2_ways} ways "
                              "of whole 64-byte blocks")

    @property
    def soc(self) -> bool:
        """Whether the SoC's models are on (a host cost or an L2); else the accelerator alone."""
        return bool(self.host_cmd_cycles or self.l2_kib)

    def rtl_hash(self) -> str:
        """Digest of the fields the RTL is built from (all but TIMING): one build serves every SoC timing."""
        text = ",".join(f"{name}={value}" for name, value in zip(self._field_names(), self.hardware_fields())
                        if name not in TIMING)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def _field_names(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.name != "name"]

    @property
    def watchdog_cycles(self) -> int:
        """Cycles without progress after which a simulation counts as deadlocked: a DMA read
        makes no progress for ``dram_latency`` cycles, so the threshold grows with it."""
        return 100_000 + 4 * self.dram_latency

    # ---- derived sizes -------------------------------------------------
    @property
    def sp_rows(self) -> int:
        """Scratchpad rows (``dim`` int8 values each)."""
        return self.sp_kib * 1024 // self.dim

    @property
    def acc_rows(self) -> int:
        """Accumulator rows (``dim`` int32 values each)."""
        return self.acc_kib * 1024 // (self.dim * 4)

    @property
    def sp_bank_rows(self) -> int:
        """Rows of one scratchpad bank."""
        return self.sp_rows // self.sp_banks

    @property
    def acc_bank_rows(self) -> int:
        """Rows of one accumulator bank."""
        return self.acc_rows // self.acc_banks

    @property
    def max_mvin_cols(self) -> int:
        """The most columns one mvin moves: ``dim`` x ``max_block_len``."""
        return self.dim * self.max_block_len

    # ---- identity --------------------------------------------------------
    def as_dict(self) -> dict[str, Any]:
        """Every field by name."""
        return dataclasses.asdict(self)

    def has_dataflow(self, dataflow: str) -> bool:
        """Whether config_ex may choose ``dataflow`` ("ws" or "os") on this hardware."""
        return self.dataflows in (dataflow, "both")

    def hardware_fields(self) -> tuple[int, ...]:
        """The fields that shape hardware, in declaration order (name excluded), as numbers."""
        return tuple(DATAFLOW_SETS[self.dataflows] if f.name == "dataflows" else int(getattr(self, f.name))
                     for f in fields(self) if f.name != "name")

    @classmethod
    def from_hardware_fields(cls, name: str, values: tuple[int, ...]) -> "HardwareConfig":
        """The inverse of :meth:`hardware_fields` (a program file's numbers)."""
        keys = [f.name for f in fields(cls) if f.name != "name"]
        data: dict[str, Any] = dict(zip(keys, values, strict=True))
        by_number = {v: k for k, v in DATAFLOW_SETS.items()}
        if data["dataflows"] not in by_number:
            raise ConfigError(f"HardwareConfig.dataflows={data['dataflows']} must be one of {sorted(by_number)} "
                              f"({', '.join(f'{v} {k}' for k, v in DATAFLOW_SETS.items())})")
        data["dataflows"] = by_number[data["dataflows"]]
        for flag in FLAGS:
            if data[flag] not in (0, 1):
                raise ConfigError(f"HardwareConfig.{flag}={data[flag]} must be 0 or 1")
            data[flag] = bool(data[flag])
        return cls(name=name, **data)

    def config_hash(self) -> str:
        """Stable hex digest of the hardware fields (the name does not matter). Fields added later stay
        out at their defaults (dataflows="both", store_requant=False): programs run on such hardware cycle
        for cycle as they did before the field existed, so tuning records keyed before it keep their keys."""
        text = ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                        if f.name != "name" and getattr(self, f.name) != _UNHASHED_DEFAULTS.get(f.name, object()))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    # ---- presets and files ---------------------------------------------
    @classmethod
    def preset(cls, name: str) -> "HardwareConfig":
        """A preset by name: "gemmini" (Gemmini in its SoC), "gemmini-alone" (the same accelerator alone),
        "tiny" (4x4, for tests)."""
        try:
            return PRESETS[name]
        except KeyError:
            raise ConfigError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}") from None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HardwareConfig":
        """A config from a dict of fields; the fields it leaves out keep their defaults (the gemmini preset's)."""
        if not isinstance(data, dict):
            raise ConfigError(f"a hardware config is a table of fields, got {type(data).__name__} {data!r:.60}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown HardwareConfig field(s) {unknown}; known fields are {sorted(known)}")
        return cls(**data)

    @classmethod
    def load(cls, path: str | Path) -> "HardwareConfig":
        """Load from a TOML file: a flat table, or one under ``[hardware]``."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"hardware config file {str(path)!r} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"hardware config file {str(path)!r} is not valid TOML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"cannot read hardware config file {str(path)!r}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"hardware config file {str(path)!r} is not text") from None
        data = data.get("hardware", data)
        if isinstance(data, dict):
            if not set(data) - {"name"}:  # the defaults are the gemmini preset: say so instead of meaning it
                raise ConfigError(f"hardware config file {str(path)!r} sets no hardware field; set some of "
                                  f"{', '.join(f.name for f in fields(cls) if f.name != 'name')} "
                                  "(or use the preset: --config gemmini)")
            data = {"name": path.stem, **data}
        try:
            return cls.from_dict(data)
        except ConfigError as exc:
            raise ConfigError(f"hardware config file {str(path)!r}: {exc}") from None

    def to_toml(self) -> str:
        """The config as a TOML ``[hardware]`` table, as ``--config FILE.toml`` reads it."""
        lines = ["[hardware]"]
        for key, value in self.as_dict().items():
            text = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else value
            lines.append(f"{key} = {text}")
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_toml` to ``path``."""
        Path(path).write_text(self.to_toml())

    @classmethod
    def resolve(cls, spec: "str | Path | HardwareConfig") -> "HardwareConfig":
        """A preset name, a TOML path or a config, as the CLI accepts them."""
        if isinstance(spec, HardwareConfig):
            return spec
        if isinstance(spec, str) and spec in PRESETS:
            return PRESETS[spec]
        if str(spec).endswith(".toml"):
            return cls.load(spec)
        raise ConfigError(f"hw={spec!r} is neither a preset ({sorted(PRESETS)}) nor a .toml file")


# the accelerator alone: free issue and the ideal DRAM port (what every cycle count meant before the SoC)
ALONE: dict[str, int] = {"host_cmd_cycles": 0, "l2_kib": 0}

PRESETS: dict[str, HardwareConfig] = {
    # Gemmini's default config inside the SoC FireSim builds for it
    "gemmini": HardwareConfig(name="gemmini"),
    # the same accelerator alone, with the ideal port's 40-cycle latency as before the SoC
    "gemmini-alone": HardwareConfig(name="gemmini-alone", dram_latency=40, **ALONE),
    "tiny": HardwareConfig(name="tiny", dim=4, sp_kib=4, sp_banks=2, acc_kib=1, acc_banks=2,
                           dma_beat_bytes=4, max_block_len=2, dram_latency=10,
                           ld_queue=4, ex_queue=4, st_queue=2, **ALONE),
}
