"""Import throughput per agent format: events/s and MB/s, scaled up from fixtures.

Each format's seed history is the recording of the real agent when the repository has one
(``tests/importers/recorded/<agent>/RECORDED.json`` names its format), else the history the
format's test generator writes. The seed is copied ``--copies`` times, each copy with new
UUIDs in its file names and contents (so sessions stay distinct where ids are UUIDs), and:

1. **Conversion** (in process, no NATS): every source converted and checked exactly as
   ``import`` does (``pipeline.convert_file``), against the floor measured on the same files
   in the same run: reading them and parsing every JSON value they hold (each line of a
   JSON Lines file, a whole document, every JSON column of a database), the least any
   importer must do. The ratio is conversion CPU over floor CPU (this process's).
2. **End to end** (``--nats``): ``sessionquery import --format <fmt>`` of the copies into a
   fresh stream of a nats-server this bench starts (or ``NATS_URL`` on loopback), against
   the floor of importing the same events as our own JSON Lines (``--format events``,
   no conversion) into another fresh stream: wall time and the child's CPU.

``python -m bench.import_formats --copies 2000 [--nats] [--formats claude-code,codex]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from bench.report import (
    Check,
    bench_subjects,
    checks_of,
    format_table,
    nats_url,
    result_dict,
    write_result,
)

RECORDED: Final = Path(__file__).resolve().parent.parent / "tests" / "importers" / "recorded"
# Conversion may cost this many times the JSON parse of the same files (CPU).
CONVERT_VS_PARSE: Final = 6.0
# An import of a format may take this many times the import of the same events as our
# own JSON Lines (wall time): the publish path is shared, conversion is the difference.
IMPORT_VS_EVENTS: Final = 1.5
_UUID: Final = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SQLITE: Final = b"SQLite format 3\x00"


def _generated_seeds() -> dict[str, Callable[[Path], Path]]:
    """Format -> a writer of its generated history under a home folder (returns the root
    ``import`` reads)."""
    from tests.importers import (
        gen_copilot_cli,
        gen_cursor,
        gen_droid,
        gen_gemini_cli,
        gen_kimi,
        gen_pi,
        gen_qwen_code,
    )

    return {
        "copilot-cli": gen_copilot_cli.write,
        "cursor": gen_cursor.write,
        "droid": gen_droid.write,
        "gemini-cli": gen_gemini_cli.write,
        "kimi": gen_kimi.write,
        "pi": gen_pi.write,
        "qwen-code": gen_qwen_code.write,
        "claude-code": _fixture_tree("claude-code"),
        "codex": _fixture_tree("codex"),
    }


def _fixture_tree(fmt: str) -> Callable[[Path], Path]:
    source = Path(__file__).resolve().parent.parent / "tests" / "importers" / "fixtures" / fmt

    def write(home: Path) -> Path:
        shutil.copytree(source, home / fmt)
        return home / fmt

    return write


def recorded_seeds() -> dict[str, tuple[str, Path]]:
    """Format -> (agent, folder) of each recording in the repository."""
    found: dict[str, tuple[str, Path]] = {}
    for manifest in sorted(RECORDED.glob("*/RECORDED.json")):
        meta = orjson.loads(manifest.read_bytes())
        root = manifest.parent / str(meta.get("root", "."))
        found.setdefault(str(meta["format"]), (str(meta.get("agent", manifest.parent.name)), root))
    return found


@dataclass(frozen=True)
class Seed:
    fmt: str
    origin: str  # "recorded from <agent>" or "generated"
    write: Callable[[Path], Path]


def seeds(formats: Sequence[str] | None) -> list[Seed]:
    recorded = recorded_seeds()
    generated = _generated_seeds()
    chosen: list[Seed] = []
    for fmt in sorted(set(recorded) | set(generated)):
        if formats and fmt not in formats:
            continue
        if fmt in recorded:
            agent, root = recorded[fmt]
            chosen.append(Seed(fmt, f"recorded ({agent})", _copier(root)))
        else:
            chosen.append(Seed(fmt, "generated", generated[fmt]))
    return chosen


def _copier(root: Path) -> Callable[[Path], Path]:
    def write(home: Path) -> Path:
        target = home / "seed"
        shutil.copytree(root, target, ignore=shutil.ignore_patterns("RECORDED.json"))
        return target

    return write


def scale(seed_root: Path, out: Path, copies: int) -> None:
    """``copies`` copies of ``seed_root`` under ``out``, copy k with every UUID in file
    names and text rewritten to one of its own (databases are copied as they are)."""
    for k in range(copies):
        mapping: dict[bytes, bytes] = {}

        def fresh(
            match: re.Match[bytes], k: int = k, mapping: dict[bytes, bytes] = mapping
        ) -> bytes:
            old = match.group(0)
            if old not in mapping:
                mapping[old] = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{k}:{old.decode()}")).encode()
            return mapping[old]

        for path in sorted(seed_root.rglob("*")):
            if not path.is_file():
                continue
            relative = str(path.relative_to(seed_root)).encode()
            target = out / f"copy{k:05d}" / _UUID.sub(fresh, relative).decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            if data.startswith(_SQLITE):
                target.write_bytes(data)
            else:
                target.write_bytes(_UUID.sub(fresh, data))
            os.utime(target, (path.stat().st_atime, path.stat().st_mtime))


def cpu_s() -> float:
    """This process's CPU seconds (user + system; /proc's 10 ms tick is too coarse here)."""
    return time.process_time()


def source_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def convert_all(fmt: str, root: Path) -> tuple[int, int, list[bytes]]:
    """(events, source bytes, event bodies) of every source under ``root``, as ``import``
    converts them (one links table, path order)."""
    from worker.importers.base import SpawnLinks
    from worker.importers.detect import expand
    from worker.importers.pipeline import convert_file

    links = SpawnLinks()
    bodies: list[bytes] = []
    size = 0
    for path in expand([root], fmt):
        size += source_bytes(path)
        events, _ = convert_file(fmt, path, links=links)
        bodies.extend(out.body for out in events)
    return len(bodies), size, bodies


def _json_values(path: Path) -> Iterator[object]:
    data = path.read_bytes()
    if data.startswith(_SQLITE):
        yield from _database_values(path)
        return
    try:
        yield orjson.loads(data)
        return
    except orjson.JSONDecodeError:
        pass
    for line in data.splitlines():
        if line.strip():
            try:
                yield orjson.loads(line)
            except orjson.JSONDecodeError:
                yield line.decode("utf-8", "replace")


def _database_values(path: Path) -> Iterator[object]:
    from worker.importers.readonly_db import read_only, tables

    with read_only(path) as conn:
        for name in sorted(tables(conn)):
            for row in conn.execute(f'SELECT * FROM "{name}"'):
                for value in tuple(row):
                    if isinstance(value, str) and value[:1] in ("{", "["):
                        try:
                            yield orjson.loads(value)
                        except orjson.JSONDecodeError:
                            yield value


def parse_floor(root: Path) -> int:
    """Read every file under ``root`` and parse the JSON it holds; returns the values."""
    return sum(1 for path in sorted(root.rglob("*")) if path.is_file() for _ in _json_values(path))


def measure_conversion(seed: Seed, work: Path, copies: int) -> dict[str, Any]:
    home = work / seed.fmt / "home"
    home.mkdir(parents=True)
    root = seed.write(home)
    scaled = work / seed.fmt / "scaled"
    scale(root, scaled, copies)
    start_wall, start_cpu = time.perf_counter(), cpu_s()
    events, size, bodies = convert_all(seed.fmt, scaled)
    wall, cpu = time.perf_counter() - start_wall, cpu_s() - start_cpu
    floor_start = cpu_s()
    values = parse_floor(scaled)
    floor_cpu = cpu_s() - floor_start
    events_file = work / seed.fmt / "events.jsonl"
    events_file.write_bytes(b"".join(body + b"\n" for body in bodies))
    return {
        "format": seed.fmt, "origin": seed.origin, "copies": copies, "events": events,
        "source_bytes": size, "json_values": values, "convert_wall_s": wall,
        "convert_cpu_s": cpu, "parse_cpu_s": floor_cpu,
        "events_per_s": events / wall if wall else float("nan"),
        "mb_per_s": size / 1e6 / wall if wall else float("nan"),
        "root": str(scaled), "events_file": str(events_file),
    }  # fmt: skip


def _import(url: str, fmt: str, path: Path, tag: str) -> tuple[float, float, str]:
    """(wall s, child CPU s, stderr) of one ``sessionquery import`` into a fresh stream."""
    subjects = bench_subjects(tag)
    argv = [
        sys.executable, "-m", "worker.cli", "import", "--format", fmt, str(path),
        "--nats-url", url, "--stream", subjects.events_stream,
        "--events-prefix", subjects.events_prefix, "--timezone", "UTC", "--idle-seconds", "inf",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"import of {fmt} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu, done.stderr


def measure_end_to_end(url: str, row: dict[str, Any]) -> dict[str, Any]:
    wall, cpu, said = _import(url, row["format"], Path(row["root"]), "impf")
    floor_wall, floor_cpu, _ = _import(url, "events", Path(row["events_file"]), "impe")
    published = re.search(r"published (\d+) events", said)
    return {
        "import_wall_s": wall, "import_cpu_s": cpu, "events_import_wall_s": floor_wall,
        "events_import_cpu_s": floor_cpu,
        "published": int(published.group(1)) if published else None,
        "import_events_per_s": row["events"] / wall if wall else float("nan"),
        "import_mb_per_s": row["source_bytes"] / 1e6 / wall if wall else float("nan"),
    }  # fmt: skip


async def run(
    formats: Sequence[str] | None,
    copies: int,
    *,
    with_nats: bool,
    work_dir: Path | None = None,
    url: str | None = None,
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    checks: list[Check] = []
    with tempfile.TemporaryDirectory(prefix="sq-bench-import-", dir=work_dir) as tmp:
        for seed in seeds(formats):
            row = measure_conversion(seed, Path(tmp), copies)
            checks.append(Check(f"{seed.fmt}: convert CPU / parse", row["convert_cpu_s"],
                                row["parse_cpu_s"], "s", "max", CONVERT_VS_PARSE))  # fmt: skip
            rows.append(row)
        if with_nats:
            async with nats_url(url) as server:
                for row in rows:
                    row.update(await asyncio.to_thread(measure_end_to_end, server, row))
                    checks.append(Check(f"{row['format']}: import / events import",
                                        row["import_wall_s"], row["events_import_wall_s"], "s",
                                        "max", IMPORT_VS_EVENTS))  # fmt: skip
        for row in rows:
            row.pop("root"), row.pop("events_file")
    return result_dict(
        "import_formats", params={"copies": copies, "nats": with_nats},
        checks=checks, measurements={"formats": rows},
    )  # fmt: skip


def rate_table(rows: list[dict[str, Any]]) -> str:
    header = (f"{'format':<14} {'seed':<24} {'events':>9} {'MB':>8} {'convert ev/s':>13}"
              f" {'MB/s':>7} {'import ev/s':>12} {'MB/s':>7}")  # fmt: skip
    lines = [header, "-" * len(header)]
    for r in rows:
        imported = (f"{r['import_events_per_s']:>12,.0f} {r['import_mb_per_s']:>7.1f}"
                    if "import_events_per_s" in r else f"{'-':>12} {'-':>7}")  # fmt: skip
        lines.append(
            f"{r['format']:<14} {r['origin'][:24]:<24} {r['events']:>9,} "
            f"{r['source_bytes'] / 1e6:>8.1f} {r['events_per_s']:>13,.0f} {r['mb_per_s']:>7.1f} "
            f"{imported}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=2000, help="copies of each seed history")
    parser.add_argument("--formats", default="", help="comma-separated formats (default: all)")
    parser.add_argument("--nats", action="store_true", help="also import end to end over NATS")
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f] or None
    result = asyncio.run(run(formats, args.copies, with_nats=args.nats, work_dir=args.work_dir))
    print(rate_table(result["measurements"]["formats"]))
    print()
    print(format_table("Import throughput per format", checks_of(result)))
    print(f"\nresult: {write_result(result)}")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
