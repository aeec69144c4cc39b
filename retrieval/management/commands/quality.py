import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from retrieval import quality, quality_eval
from retrieval.embeddings import get_embedder
from reviews.space_args import spaces_from

PAIRS = Path(settings.BASE_DIR) / "tests" / "data" / "quality_pairs.jsonl"


class Command(BaseCommand):
    help = (
        "Report what looks wrong in the memory (possible contradictions, broken supersession, stale "
        "proposals, overdue or edited records, index drift) with the next step for each. Changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--space", action="append", dest="space", metavar="SLUG", help="only this space (repeat; default: all)"
        )
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

        parser.add_argument(
            "--eval",
            nargs="?",
            const=str(PAIRS),
            metavar="PAIRS.jsonl",
            help="instead of checking the memory, measure the contradiction rule and the duplicate offer on "
            "labelled pairs (default tests/data/quality_pairs.jsonl): precision and recall on the dev half "
            "(tuned on), the held-out test half and all",
        )
        parser.add_argument("--verbose-pairs", action="store_true", help="with --eval, list every wrong pair")

    def handle(self, *args, **opts):
        threshold = opts["threshold"]
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise CommandError(f"--threshold {threshold}: give a number from 0 to 1.")
        if opts["eval"]:
            return self._eval(Path(opts["eval"]), threshold, opts["verbose_pairs"], opts["json"])
        if opts["limit"] < 0:
            raise CommandError(f"--limit {opts['limit']}: give 0 (all) or a positive number.")
        report = quality.run(spaces_from(opts, self.stderr) or None, threshold=threshold, limit=opts["limit"])
        if opts["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
            return
        self.stdout.write(
            f"Checked {report.checked_records} current record(s) in {', '.join(report.spaces)}: "
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
                self.stdout.write(f"  - {ids}{' ' if ids else ''}[{finding.space or 'all'}] {finding.why}")
                self.stdout.write(f"    next: {finding.suggestion}")

    def _eval(self, path: Path, threshold, verbose: bool, as_json: bool):
        if not path.is_file():
            raise CommandError(f"--eval {path}: no such file; give a JSON-lines file of labelled pairs.")
        try:
            pairs = quality_eval.load(path)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        embedder = get_embedder()
        quality_eval.evaluate(pairs, embedder, threshold)
        table = quality_eval.scores(pairs)
        if as_json:
            data = {
                split: {
                    name: {
                        "precision": s.precision,
                        "recall": s.recall,
                        "flagged": s.flagged,
                        "right": s.right,
                        "wanted": s.wanted,
                    }
                    for name, s in found.items()
                }
                for split, found in table.items()
            }
            self.stdout.write(json.dumps(data, indent=2))
            return
        limit = threshold if threshold is not None else settings.VETTED_CONTRADICTION_SIMILARITY
        self.stdout.write(
            f"{len(pairs)} labelled pairs in {path.name}, embedder {embedder.name}; contradiction at similarity "
            f">= {limit}, duplicate offer at >= {quality.DUPLICATE_SIMILARITY}"
        )
        self.stdout.write(
            f"{'split':<6} {'pairs':>5}  {'what':<14} {'precision':>9} {'recall':>7}  right/flagged/wanted"
        )
        for split in ("dev", "test", "all"):
            if split not in table:
                continue
            count = sum(1 for p in pairs if split in ("all", p.split))
            for name, score in table[split].items():
                self.stdout.write(
                    f"{split:<6} {count:>5}  {name:<14} {score.precision:>9.2f} {score.recall:>7.2f}  "
                    f"{score.right}/{score.flagged}/{score.wanted}"
                )
        if verbose:
            for p in pairs:
                wrong_flag = bool(p.reasons) != (p.label == "contradiction")
                wrong_dup = p.duplicate != (p.label == "paraphrase") and p.duplicate
                if wrong_flag or wrong_dup:
                    first = p.a.partition("\n")[0]
                    self.stdout.write(
                        f"  {p.split} {p.label} {p.similarity:.2f} '{first}': reasons {p.reasons or 'none'}"
                        f"{', offered as duplicate' if p.duplicate else ''}"
                    )
