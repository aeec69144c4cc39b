import json

from django.core.management.base import BaseCommand, CommandError

from memory_site.space_args import spaces_from
from retrieval import quality


class Command(BaseCommand):
    help = (
        "Report what looks wrong in the memory (possible contradictions, broken supersession, stale "
        "proposals, overdue or edited records, index drift) with the next step for each. Changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--space", action="append", dest="space", metavar="SLUG", help="only this space (repeat; default: all)"
        )
        parser.add_argument("--scope", action="append", dest="scope_alias", help="deprecated alias of --space")
        parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
        parser.add_argument(
            "--limit",
            type=int,
            default=100,
            help="list at most this many possible contradictions, most similar first (0: all)",
        )
        parser.add_argument(
            "--threshold",
            type=float,
            help="similarity for possible contradictions (default VETTED_CONTRADICTION_SIMILARITY)",
        )

    def handle(self, *args, **opts):
        threshold = opts["threshold"]
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise CommandError(f"--threshold {threshold}: give a number from 0 to 1.")
        if opts["limit"] < 0:
            raise CommandError(f"--limit {opts['limit']}: give 0 (all) or a positive number.")
        report = quality.run(spaces_from(opts, self.stderr) or None, threshold=threshold, limit=opts["limit"])
        if opts["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
            return
        self.stdout.write(
            f"Checked {report.checked_records} current record(s) in {', '.join(report.scopes)}: "
            f"{len(report.findings)} finding(s)."
        )
        for kind, label in quality.LABELS.items():
            found = [f for f in report.findings if f.kind == kind]
            if not found:
                continue
            more = report.omitted.get(kind, 0)
            self.stdout.write(
                f"\n{label} ({len(found) + more}"
                + (f"; the {len(found)} most similar listed, --limit 0 lists all)" if more else ")")
            )
            for finding in found:
                ids = " ".join(finding.records + finding.proposals)
                self.stdout.write(f"  - {ids}{' ' if ids else ''}[{finding.scope or 'all'}] {finding.why}")
                self.stdout.write(f"    next: {finding.suggestion}")
