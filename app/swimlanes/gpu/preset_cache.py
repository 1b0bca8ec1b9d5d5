"""Calibrated device presets cached per GPU and host, in the user's config folder.

Each cache entry is two files in ``<config>/swimlanes/presets/``:

* ``<id>.json``: a plain ``swimlanes-device`` preset, so ``--device <id>.json`` and the app's
  preset file chooser take it as it is;
* ``<id>.calibration.json``: ``{"format": "swimlanes-calibration", "version": 1, "id",
  "preset_file", "host": {gpu, driver, cpu, hostname}, "calibrated_at" (ISO 8601, UTC),
  "quick"}``, which says where and when it was calibrated.

The folder is ``$SWIMLANES_CONFIG_DIR`` when set, else the platform's user config folder
(``$XDG_CONFIG_HOME`` or ``~/.config`` on Linux, ``~/Library/Application Support`` on macOS,
``%APPDATA%`` on Windows) plus ``swimlanes``. The preset is written before its record, both
atomically, so a calibration killed half-way leaves no entry. An entry whose files cannot be
read is skipped with a message saying which file and why. Qt-free, numba-free.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from swimlanes.gpu.host import HostIdentity
from swimlanes.model.atomic_write import dump_json_atomic
from swimlanes.user_config import config_dir

CALIBRATION_FORMAT = "swimlanes-calibration"
CALIBRATION_VERSION = 1
RECORD_SUFFIX = ".calibration.json"
#: A calibration record is a few hundred bytes; anything far larger is not one.
_MAX_RECORD_BYTES = 64 * 1024


def cache_dir() -> Path:
    """Where cached presets live: ``<config>/presets``."""
    return config_dir() / "presets"


@dataclass(frozen=True)
class CachedPreset:
    """One cached calibration: the preset file and where and when it was measured."""

    id: str
    path: Path
    host: HostIdentity
    calibrated_at: str
    quick: bool = False

    @property
    def date(self) -> str:
        """``2026-12-01 14:02 UTC`` (the record's time as written, if it is not ISO 8601)."""
        try:
            return datetime.fromisoformat(self.calibrated_at).strftime("%Y-%m-%d %H:%M UTC")
        except ValueError:
            return self.calibrated_at

    def describe(self) -> str:
        """Where and when: ``calibrated 2026-12-01 14:02 UTC on host gpu-7 (CPU, driver D)``."""
        how = " (quick)" if self.quick else ""
        return f"calibrated{how} {self.date} on {self.host.describe()}"

    def reference(self) -> dict[str, Any]:
        """What a measured run records about the preset it was calibrated against."""
        return {
            "id": self.id,
            "path": str(self.path),
            "calibrated_at": self.calibrated_at,
            "host": self.host.to_dict(),
        }

    def to_json(self) -> dict[str, Any]:
        """The ``swimlanes devices --json`` row fields of this entry."""
        return {
            "id": self.id,
            "path": str(self.path),
            "gpu": self.host.gpu,
            "hostname": self.host.hostname,
            "cpu": self.host.cpu,
            "driver": self.host.driver,
            "calibrated_at": self.calibrated_at,
            "quick": self.quick,
        }


def entry_id(host: HostIdentity) -> str:
    """A file-name-safe id: GPU and host name for people, a hash of the whole identity so
    that a new driver or CPU gets its own entry."""
    from swimlanes.gpu.calibrate import preset_name

    digest = hashlib.sha256(json.dumps(host.to_dict(), sort_keys=True).encode()).hexdigest()
    hostname = re.sub(r"[^a-z0-9]+", "-", host.hostname.lower()).strip("-")[:32] or "host"
    return f"{preset_name(host.gpu)[:40]}-{hostname}-{digest[:8]}"


def store(preset: dict[str, Any], host: HostIdentity, *, quick: bool = False) -> CachedPreset:
    """Cache a calibrated preset of ``host`` (replacing that host's earlier one); OSError if
    the folder cannot be written."""
    from swimlanes.engine.presets import DevicePreset

    ident = entry_id(host)
    when = datetime.now(UTC).replace(microsecond=0)
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    fields = dict(preset)
    fields["name"] = ident
    fields["description"] = (
        f"{host.gpu} calibrated{' (quick)' if quick else ''} {when:%Y-%m-%d %H:%M} UTC on "
        f"{host.describe()}. " + str(preset.get("description", ""))
    ).strip()
    path = folder / f"{ident}.json"
    dump_json_atomic(DevicePreset.from_dict(fields).to_dict(), path)
    entry = CachedPreset(ident, path, host, when.isoformat(), quick)
    record = {
        "format": CALIBRATION_FORMAT,
        "version": CALIBRATION_VERSION,
        "id": ident,
        "preset_file": path.name,
        "host": host.to_dict(),
        "calibrated_at": entry.calibrated_at,
        "quick": quick,
    }
    dump_json_atomic(record, folder / f"{ident}{RECORD_SUFFIX}")
    return entry


def list_cached() -> tuple[list[CachedPreset], list[str]]:
    """Every readable entry, newest first, and one message per entry that was skipped."""
    folder = cache_dir()
    try:
        records = sorted(folder.glob(f"*{RECORD_SUFFIX}"))
    except OSError as err:
        return [], [f"cannot read the preset cache {folder}: {err.strerror or err}"]
    entries: list[CachedPreset] = []
    problems: list[str] = []
    for record in records:
        try:
            entries.append(read_entry(record))
        except ValueError as err:
            problems.append(f"skipped cached preset {record}: {err}")
    entries.sort(key=lambda e: e.calibrated_at, reverse=True)
    return entries, problems


def read_entry(record: Path) -> CachedPreset:
    """One entry from its record file; ValueError saying what is wrong with it."""
    from swimlanes.engine.presets import load_preset

    try:
        if record.stat().st_size > _MAX_RECORD_BYTES:
            raise ValueError("too large for a calibration record")
        data = json.loads(record.read_text(encoding="utf-8"))
    except OSError as err:
        raise ValueError(f"cannot read it: {err.strerror or err}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError("not a JSON calibration record (corrupt file?)") from None
    if not isinstance(data, dict) or data.get("format") != CALIBRATION_FORMAT:
        raise ValueError(f"not a {CALIBRATION_FORMAT} file")
    if data.get("version") != CALIBRATION_VERSION:
        raise ValueError(f"unsupported version {data.get('version')!r}")
    host = HostIdentity.from_dict(data.get("host"))
    name, when = data.get("preset_file"), data.get("calibrated_at")
    if host is None or not isinstance(name, str) or not isinstance(when, str):
        raise ValueError("host, preset_file or calibrated_at is missing")
    path = record.parent / Path(name).name  # never outside the cache folder
    load_preset(path)  # ValueError naming the preset file and what is wrong with it
    ident = record.name.removesuffix(RECORD_SUFFIX)
    return CachedPreset(ident, path, host, when, bool(data.get("quick", False)))


def find_for_host(
    host: HostIdentity, entries: list[CachedPreset] | None = None
) -> CachedPreset | None:
    """The newest entry calibrated on exactly this GPU, driver, CPU and host, if any."""
    if entries is None:
        entries, _ = list_cached()
    return next((e for e in entries if e.host == host), None)


def find_for_gpu(gpu: str, entries: list[CachedPreset]) -> CachedPreset | None:
    """The newest entry of the same GPU model on any host."""
    return next((e for e in entries if e.host.gpu == gpu), None)
