import json
import statistics
import sys
from collections import defaultdict

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from retrieval import index
from retrieval import search as engine
from retrieval.embeddings import get_embedder
from retrieval.gate import Reader
from retrieval.scratch import scratch_database, scratch_reviewer
from reviews import actions


class Command(BaseCommand):
    help = (
        "Measure ranking quality: load CORPUS.jsonl (import format plus 'id') into a temporary database as "
        'approved records, run every query of QUERIES.jsonl ({"target", "type", "query"}) in each mode, '
        "and print hit@1, hit@8 and MRR per mode and query type."
    )

    def add_arguments(self, parser):
        parser.add_argument("corpus")
        parser.add_argument("queries")
        parser.add_argument("--modes", default="keyword,semantic,hybrid")
        parser.add_argument("--json", action="store_true", help="print the table as JSON")
        parser.add_argument("--misses", action="store_true", help="list hybrid rank-1 misses")

    def handle(self, *args, **opts):
        corpus = _read_jsonl(opts["corpus"])
        queries = _read_jsonl(opts["queries"])
        modes = [m.strip() for m in opts["modes"].split(",") if m.strip()]
        bad = [m for m in modes if m not in engine.MODES]
        if bad:
            raise CommandError(f"Unknown mode {', '.join(bad)}; allowed: {', '.join(engine.MODES)}.")
        embedder = get_embedder()
        with scratch_database():
            reviewer = scratch_reviewer()
            id_map = {}
            for item in tqdm(corpus, desc="load", file=sys.stderr, disable=None):
                item = dict(item)
                key = item.pop("id")
                result = actions.import_records([(0, item)], reviewer=reviewer, reason="evaluation corpus")
                id_map[key] = result.created[0]
            index.sync(embedder)
            missing = sorted({q["target"] for q in queries} - set(id_map))
            if missing:
                raise CommandError(f"Queries name targets missing from the corpus: {', '.join(missing[:10])}")
            reader = Reader.everything()
            ranks = defaultdict(list)  # (mode, type) -> ranks (None = not in top 8)
            misses = []
            for q in tqdm(queries, desc="queries", file=sys.stderr, disable=None):
                target = id_map[q["target"]]
                for mode in modes:
                    response = engine.search(
                        q["query"], mode=mode, limit=8, reader=reader, embedder=embedder, count_access=False
                    )
                    ids = [hit.record.public_id for hit in response.results]
                    rank = ids.index(target) + 1 if target in ids else None
                    ranks[(mode, q["type"])].append(rank)
                    ranks[(mode, "all")].append(rank)
                    if mode == "hybrid" and rank != 1:
                        misses.append((q, rank, ids[:3]))
        table = _table(ranks, modes)
        if opts["json"]:
            self.stdout.write(json.dumps(table))
        else:
            self._print(table, modes)
        if opts["misses"]:
            reverse = {v: k for k, v in id_map.items()}
            for q, rank, top in misses:
                self.stdout.write(
                    f"miss [{q['type']}] rank={rank} target={q['target']} "
                    f"got={[reverse.get(i) for i in top]}: {q['query']}"
                )

    def _print(self, table, modes):
        types = sorted({t for (_m, t) in [(row["mode"], row["type"]) for row in table]} - {"all"}) + ["all"]
        self.stdout.write(f"{'query type':<12} {'n':>4}  " + "  ".join(f"{m + ' hit@1/hit@8/MRR':<28}" for m in modes))
        for qtype in types:
            rows = {row["mode"]: row for row in table if row["type"] == qtype}
            n = next(iter(rows.values()))["n"]
            cells = [f"{rows[m]['hit@1']:5.1%} / {rows[m]['hit@8']:5.1%} / {rows[m]['mrr']:.3f}" for m in modes]
            self.stdout.write(f"{qtype:<12} {n:>4}  " + "  ".join(f"{c:<28}" for c in cells))


def _table(ranks, modes):
    table = []
    for (mode, qtype), values in sorted(ranks.items()):
        n = len(values)
        table.append(
            {
                "mode": mode,
                "type": qtype,
                "n": n,
                "hit@1": sum(1 for r in values if r == 1) / n,
                "hit@8": sum(1 for r in values if r is not None) / n,
                "mrr": statistics.fmean(1 / r if r else 0 for r in values),
            }
        )
    return table


def _read_jsonl(path):
    try:
        with open(path, encoding="utf-8") as handle:
            items = [json.loads(line) for line in handle if line.strip()]
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}: not JSON Lines: {exc}") from None
    return items
