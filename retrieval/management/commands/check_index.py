import json

from django.core.management.base import BaseCommand, CommandError

from retrieval import index


class Command(BaseCommand):
    help = (
        "Compare the keyword and vector indexes with the records: missing, stale or stray entries. "
        "Exits non-zero if anything is off."
    )

    def add_arguments(self, parser):
        parser.add_argument("--sync", action="store_true", help="embed queued records first (loads the model)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        embedder = None
        if opts["sync"]:
            from retrieval.embeddings import get_embedder

            embedder = get_embedder()
            try:
                index.sync(embedder)
            except index.IndexModelMismatch as exc:
                raise CommandError(str(exc)) from None
        report = index.check(embedder)
        if opts["json"]:
            self.stdout.write(json.dumps({**report.__dict__, "ok": report.ok}))
        else:
            self.stdout.write(
                f"model: {report.model or '-'} ({report.dimension or '-'} dims); records: {report.records}; "
                f"chunks: {report.chunks}; vectors: {report.vectors}; queued: {report.queued}"
            )
            for problem in report.problems:
                self.stdout.write(f"PROBLEM: {problem}")
            if report.ok:
                self.stdout.write("Index OK.")
        if not report.ok:
            raise CommandError(f"{len(report.problems)} index problem(s); `vetted index rebuild` rebuilds everything.")
