"""`manage.py stress`: the real daemon under full load from agent processes
(REST and MCP) and a reviewer process deciding through the actions, in a
throwaway data folder; then checks that nothing was lost or doubled.

With ``--flood N`` one more agent searches from N concurrent workers for the
second half of the run, ignoring Retry-After, and the report compares the
other agents' search latency before and during the flood (the read limit is
what keeps them apart).

With ``--daemons 2`` (PostgreSQL) two daemons serve the one scratch database
and each agent stays on one of them, as the documented proxy routes an
agent's token to one daemon."""

import json
import os
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from dbengine import database_engine
from devtools import stress_report
from devtools.scratch import scratch_database
from devtools.stress_report import FLOOD_NICE, database_integrity
from mcp_bridge.daemon_process import DaemonFailed, free_port, start_serve, stress_argv, wait_for_health
from retrieval import index
from retrieval.embeddings import get_embedder, make_embedder
from reviews import actions
from reviews.models import AuditEvent, Proposal, ProposalState, Record, RecordStatus

PROJECT = Path(settings.BASE_DIR)
PASSWORD = "stress-password-1234"
SEED_RECORDS = 30


def _read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            items.append(json.loads(line))
        except ValueError:
            pass  # a line cut by a killed process
    return items


class Command(BaseCommand):
    help = (
        "Stress the real daemon: N agent processes propose, search, read and dispute over REST and MCP at full "
        "speed while a reviewer process accepts, revises and rejects through the actions; then check that no "
        "request failed, every acknowledged write is present exactly once, every decision applied, the audit "
        "log counts every mutation, and the index is clean. Prints throughput and p50/p95 per operation."
    )

    def add_arguments(self, parser):
        parser.add_argument("--agents", type=int, default=8)
        parser.add_argument("--seconds", type=float, default=120)
        parser.add_argument("--mcp-share", type=float, default=0.5, help="share of agent calls made over MCP")
        parser.add_argument("--embedder", choices=["onnx", "torch", "fake"], default=settings.VETTED_EMBEDDER)
        parser.add_argument("--keep", action="store_true", help="keep the data folder and logs; print where")
        parser.add_argument(
            "--daemons", type=int, default=1, help="daemons serving the one database (more than 1: PostgreSQL)"
        )
        parser.add_argument(
            "--flood",
            type=int,
            default=0,
            metavar="THREADS",
            help="one more agent floods search from THREADS concurrent workers in the second half",
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help="seconds between one agent's calls (default: back to back; 0.25 with --flood, "
            "so the other agents behave like agents and stay under the read limit)",
        )
        parser.add_argument(
            "--reads-per-minute",
            type=int,
            default=None,
            help="the daemon's VETTED_READS_PER_MINUTE (default: off, or the configured "
            f"{settings.VETTED_READS_PER_MINUTE} with --flood; 0 = off)",
        )

    def handle(self, *args, **opts):
        if not 1 <= opts["agents"] <= 64 or opts["seconds"] < 1:
            raise CommandError("--agents 1-64 and --seconds of at least 1.")
        if not 0 <= opts["flood"] <= 256:
            raise CommandError("--flood takes 0-256 threads.")
        if not 1 <= opts["daemons"] <= 4 or (
            opts["daemons"] > 1 and not database_engine(connection).shared_by_processes
        ):
            raise CommandError("--daemons takes 1-4, and more than 1 needs PostgreSQL (VETTED_DATABASE_URL).")
        if opts["interval"] is None:
            opts["interval"] = 0.25 if opts["flood"] else 0.0
        if opts["reads_per_minute"] is None:
            opts["reads_per_minute"] = settings.VETTED_READS_PER_MINUTE if opts["flood"] else 0
        with scratch_database(keep=opts["keep"]) as folder:
            if opts["keep"]:
                self.stderr.write(f"data folder: {folder}")
            tokens = self._setup(opts["agents"] + (1 if opts["flood"] else 0))
            baseline_audit = AuditEvent.objects.count()
            baseline_proposals = set(Proposal.objects.values_list("public_id", flat=True))
            connection.close()
            results = self._run(folder, tokens, opts)
            self._report(folder, results, baseline_audit, baseline_proposals, opts)

    def _setup(self, agents: int) -> list[tuple[str, str]]:
        user_model = get_user_model()
        reviewer = user_model.objects.create_superuser("stress-reviewer", "stress@example.invalid", PASSWORD)
        tokens = []
        for n in range(agents):
            agent, token = actions.create_agent(f"stress-{n}", spaces=["personal", "team"], actor=reviewer)
            tokens.append((agent.name, token))
        seeder = actions.import_agent()
        for n in range(SEED_RECORDS):
            proposal = actions.propose_create(
                agent=seeder,
                reason="Seed for the stress run.",
                kind="fact",
                space="team" if n % 2 else "personal",
                title=f"Seed record {n} about the billing ledger",
                body=f"Seed fact {n}: the ledger service rotates its keys every {n + 2} days and pages on-call.",
            )
            actions.accept_proposal(proposal, actor=reviewer)
        return tokens

    def _run(self, folder: Path, tokens, opts) -> dict:
        ports = [free_port() for _ in range(opts["daemons"])]
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "memory_site.settings",
            "VETTED_HOME": str(folder),
            "VETTED_DB_PATH": str(folder / "scratch.sqlite3"),
            "VETTED_PROPOSALS_PER_MINUTE": "0",
            "VETTED_READS_PER_MINUTE": str(opts["reads_per_minute"]),
            "VETTED_EMBEDDER": opts["embedder"],
        }
        if not database_engine(connection).is_file:  # the scratch database on the same server
            url = urlsplit(os.environ["VETTED_DATABASE_URL"])
            env["VETTED_DATABASE_URL"] = urlunsplit(url._replace(path="/" + connection.settings_dict["NAME"]))
        flooder = tokens.pop() if opts["flood"] else None
        logs = [folder / ("serve.log" if n == 0 else f"serve-{n}.log") for n in range(len(ports))]
        daemons = [start_serve(PROJECT, env, port, log) for port, log in zip(ports, logs, strict=True)]
        base = bases[0]
        try:
            try:
                for url_base, daemon, log in zip(bases, daemons, logs, strict=True):
                    wait_for_health(url_base, daemon, log_path=log)
            except DaemonFailed as exc:
                raise CommandError(str(exc)) from None
            seconds = str(opts["seconds"])
            workers = []
            for n, (name, token) in enumerate(tokens):
                out = folder / f"agent-{n}.jsonl"
                workers.append(
                    (
                        out,
                        subprocess.Popen(
                            stress_argv(
                                "agent",
                                url=bases[n % len(bases)],
                                token=token,
                                name=name,
                                seconds=seconds,
                                out=out,
                                seed=100 + n,
                                mcp_share=opts["mcp_share"],
                                interval=opts["interval"],
                            ),
                            cwd=PROJECT,
                            env=env,
                            stdout=subprocess.DEVNULL,
                            stderr=open(folder / f"agent-{n}.err", "wb"),  # noqa: SIM115 - the child process writes it
                        ),
                    )
                )
            reviewer_out = folder / "reviewer.jsonl"
            workers.append(
                (
                    reviewer_out,
                    subprocess.Popen(
                        stress_argv("reviewer", reviewer="stress-reviewer", seconds=seconds, out=reviewer_out),
                        cwd=PROJECT,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=open(folder / "reviewer.err", "wb"),  # noqa: SIM115 - the child process writes it
                    ),
                )
            )
            started = time.monotonic()
            if flooder is not None:
                # The first half is the baseline; the flood takes the second.
                time.sleep(opts["seconds"] / 2)
                flood_out = folder / "flood.jsonl"
                # Niced: on one machine the flooding *client* would otherwise take
                # the CPU the daemon needs, and what the read limit controls is
                # the cost the flood puts on the daemon.
                workers.append(
                    (
                        flood_out,
                        subprocess.Popen(
                            [
                                "nice",
                                "-n",
                                str(FLOOD_NICE),
                                *stress_argv(
                                    "flood",
                                    url=base,
                                    token=flooder[1],
                                    name=flooder[0],
                                    seconds=opts["seconds"] / 2,
                                    threads=opts["flood"],
                                    out=flood_out,
                                ),
                            ],
                            cwd=PROJECT,
                            env=env,
                            stdout=subprocess.DEVNULL,
                            stderr=open(folder / "flood.err", "wb"),  # noqa: SIM115 - the child process writes it
                        ),
                    )
                )
            for _out, process in workers:
                try:
                    process.wait(timeout=opts["seconds"] + 120)
                except subprocess.TimeoutExpired:
                    process.kill()
            elapsed = time.monotonic() - started
        finally:
            for daemon in daemons:
                daemon.send_signal(signal.SIGTERM)
            for daemon in daemons:
                try:
                    daemon.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    daemon.kill()
        items = [item for out, _p in workers for item in _read_lines(out)]
        return {
            "items": items,
            "elapsed": elapsed,
            "daemon_log": "".join(log.read_text(errors="replace") for log in logs),
            "worker_errors": "".join(
                (folder / f).read_text(errors="replace")[-2000:] for f in os.listdir(folder) if f.endswith(".err")
            ),
        }

    def _report(self, folder, results, baseline_audit, baseline_proposals, opts):
        flood = [i for i in results["items"] if i.get("role") == "flood"]
        items = [i for i in results["items"] if "summary" not in i and i.get("role") != "flood"]
        by_op = defaultdict(list)
        for item in items:
            by_op[item["op"]].append(item)
        self.stdout.write("")
        paced = f", one call per {opts['interval']} s per agent" if opts["interval"] else ""
        self.stdout.write(
            f"{opts['agents']} agents + 1 reviewer for {results['elapsed']:.0f} s "
            f"(embedder {opts['embedder']}, MCP share {opts['mcp_share']}{paced}, reads per minute "
            f"{opts['reads_per_minute'] or 'unlimited'}; {opts['daemons']} daemon(s) on "
            f"{database_engine(connection).label}); "
            f"cpu count {os.cpu_count()}"
        )
        self.stdout.write(
            f"{'operation':<16} {'calls':>7} {'ok':>7} {'refused':>8} {'failed':>7} {'per s':>7} "
            f"{'p50 ms':>8} {'p95 ms':>8}"
        )
        for op in sorted(by_op):
            stress_report.row(self.stdout.write, op, by_op[op], results["elapsed"])
        if opts["flood"]:
            stress_report.flood_report(self.stdout.write, flood, items, results["elapsed"], opts)

        checks = []
        failed = [i for i in items + flood if i.get("result") == "failed"]
        locked = results["daemon_log"].count("database is locked")
        server_errors = results["daemon_log"].count('" 500 ') + results["daemon_log"].count("Traceback")
        checks.append(
            (
                "no failed request (5xx, connection error, exception)",
                not failed,
                f"{len(failed)} failed"
                + (
                    f"; first: {failed[0]['op']} {failed[0].get('status', '')} {failed[0].get('message')}"
                    if failed
                    else ""
                ),
            )
        )
        checks.append(
            (
                "no 'database is locked' and no traceback in the daemon log",
                locked == 0 and server_errors == 0,
                f"locked {locked}, errors {server_errors}",
            )
        )

        acked = [i["proposal_id"] for i in items if i.get("role") == "agent" and i.get("proposal_id")]
        stored = Proposal.objects.filter(public_id__in=acked).count()
        new = set(Proposal.objects.values_list("public_id", flat=True)) - baseline_proposals
        checks.append(
            (
                "every acknowledged proposal stored exactly once",
                len(set(acked)) == len(acked) == stored and new == set(acked),
                f"{len(acked)} acknowledged, {stored} found, {len(new)} new in the database",
            )
        )

        decided = [i for i in items if i.get("role") == "reviewer" and i["result"] == "ok"]
        wrong = []
        states = dict(
            Proposal.objects.filter(public_id__in=[d["proposal_id"] for d in decided]).values_list("public_id", "state")
        )
        for d in decided:
            expected = ProposalState.REJECTED if d["op"] == "reject" else ProposalState.ACCEPTED
            if states.get(d["proposal_id"]) != expected:
                wrong.append(d["proposal_id"])
        checks.append(
            ("every acknowledged decision applied", not wrong, f"{len(decided)} decisions, {len(wrong)} not applied")
        )

        mutations = len(acked) + len(decided)
        audit = AuditEvent.objects.count() - baseline_audit
        checks.append(
            ("audit events = acknowledged mutations", audit == mutations, f"{audit} events, {mutations} mutations")
        )

        checks.append(database_integrity())

        live_per_chain: defaultdict[int, int] = defaultdict(int)
        for record in Record.objects.filter(status__in=[RecordStatus.APPROVED, RecordStatus.DISPUTED]):
            root = record
            while root.supersedes_id:
                root = Record.objects.get(pk=root.supersedes_id)
            live_per_chain[root.pk] += 1
        doubled = [k for k, v in live_per_chain.items() if v > 1]
        checks.append(("at most one current version per chain", not doubled, f"{len(doubled)} chains doubled"))

        queued = index.pending_count()
        embedder = get_embedder() if opts["embedder"] == settings.VETTED_EMBEDDER else make_embedder(opts["embedder"])
        index.sync(embedder)
        report = index.check(embedder)
        checks.append(
            (
                "check_index clean (after embedding the last queue)",
                report.ok,
                f"{queued} queued at the end; " + ("; ".join(report.problems) or "no problems"),
            )
        )

        self.stdout.write("")
        for label, ok, detail in checks:
            self.stdout.write(f"{'PASS' if ok else 'FAIL'}  {label}: {detail}")
        if not all(ok for _l, ok, _d in checks):
            tail = results["worker_errors"][-1500:]
            raise CommandError(
                f"stress checks failed (data folder {folder}; rerun with --keep to inspect)"
                + (f"\nworker stderr:\n{tail}" if tail.strip() else "")
            )
        self.stdout.write("all checks passed")
