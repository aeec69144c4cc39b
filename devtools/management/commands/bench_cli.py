"""Benchmark how fast `vetted` starts: every command that does not serve,
as a person types it (`--help` of the tool, of each group and of each
command, and real runs of `review list`, `agent list`, `status`), each
spawned afresh as `python -m memory_site.command_line` over a scratch
database, with compiled modules kept as an installed Python keeps them.
Prints the median wall time and the median CPU time of the process
(CPU time moves less when other work shares the machine)."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from devtools.scratch import scratch_database, scratch_reviewer
from memory_site.command_line import table
from reviews import actions

PROJECT = Path(settings.BASE_DIR)
TARGET_SECONDS = 1.0


def help_commands() -> list[list[str]]:
    """`--help` of the tool, every group and every command but serve."""
    found: list[list[str]] = [["--help"], ["status", "--help"], ["stop", "--help"], ["completion", "--help"]]
    found += [[name, "--help"] for name in table.COMMANDS]

    def walk(prefix: list[str], group: table.Group) -> None:
        found.append([*prefix, "--help"])
        for name, member in group[1].items():
            if isinstance(member, table.Target):
                found.append([*prefix, name, "--help"])
            else:
                walk([*prefix, name], member)

    for name, group in table.GROUPS.items():
        walk([name], group)
    return found


RUNS = [["review", "list"], ["agent", "list"], ["status"], ["completion", "bash"]]


class Command(BaseCommand):
    help = (
        "Benchmark the start of every `vetted` command that does not serve (each --help, and real runs of "
        "review list, agent list, status): median wall and CPU time per command, against a 1 s target."
    )

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=5, help="starts per command (default 5)")
        parser.add_argument("--only-runs", action="store_true", help="only the real runs, not every --help")

    def handle(self, *args, **opts):
        if opts["runs"] < 1:
            raise CommandError("--runs must be at least 1.")
        commands = RUNS if opts["only_runs"] else [*help_commands(), *RUNS]
        with scratch_database() as folder:
            actions.create_agent("bench-agent", spaces=["personal", "team"], actor=scratch_reviewer())
            env = {
                **os.environ,
                "PYTHONPATH": str(PROJECT),
                "VETTED_HOME": str(folder),
                "VETTED_DB_PATH": str(folder / "scratch.sqlite3"),
                "VETTED_REVIEWER": "bench",
            }
            env.pop("DJANGO_SETTINGS_MODULE", None)
            # As installed: Python keeps the compiled modules (a first, uncounted
            # run writes them), even where this shell says not to.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            self._start(["review", "list"], env)
            rows = []
            for argv in commands:
                walls, cpus = [], []
                for _ in range(opts["runs"]):
                    wall, cpu = self._start(argv, env)
                    walls.append(wall)
                    cpus.append(cpu)
                rows.append((" ".join(["vetted", *argv]), statistics.median(walls), statistics.median(cpus)))
                self.stderr.write(f"  {rows[-1][0]}: {rows[-1][1] * 1000:.0f} ms")
        self.stdout.write("")
        self.stdout.write(
            f"vetted start, median of {opts['runs']} runs; cpu count {os.cpu_count()}, "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        self.stdout.write("")
        self.stdout.write("| command | wall ms | CPU ms | under 1 s |")
        self.stdout.write("|---|---:|---:|:---:|")
        for name, wall, cpu in rows:
            self.stdout.write(
                f"| `{name}` | {wall * 1000:.0f} | {cpu * 1000:.0f} | {'yes' if wall < TARGET_SECONDS else 'NO'} |"
            )
        slowest = max(rows, key=lambda row: row[1])
        self.stdout.write("")
        self.stdout.write(f"slowest: `{slowest[0]}` {slowest[1] * 1000:.0f} ms")

    def _start(self, argv: list[str], env: dict) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "memory_site.command_line", *argv],
            cwd=PROJECT,
            env=env,
            capture_output=True,
            timeout=60,
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 3):  # status says 3 when the daemon is down
            raise CommandError(f"vetted {' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu
