"""LoCoMo recall: one approved record per conversation turn, every category
1-4 question searched in each mode. See docs/search-quality.md."""

import hashlib
import json
import logging
import re
import shutil
import sys
import time
from collections import defaultdict
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from tqdm import tqdm

from dbengine import database_engine
from devtools.evaluation import SPLITS, dump_candidates, in_split, split_of
from devtools.scratch import scratch_database, scratch_reviewer
from retrieval import index
from retrieval import search as engine
from retrieval.embeddings import get_embedder
from retrieval.gate import Reader
from reviews import actions

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_SESSION = re.compile(r"session_(\d+)")


class Command(BaseCommand):
    help = (
        "Recall on LoCoMo (snap-research/LoCoMo, data/locomo10.json, CC BY-NC 4.0: not shipped, pass its "
        "path). Each conversation goes into its own temporary database, one approved record per turn; each "
        "category 1-4 question is searched in each mode, and the command prints recall@k (at least one "
        "evidence turn in the top k, and all of them) per mode and per category, with import and search times."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="locomo10.json")
        parser.add_argument("--convs", type=int, default=0, help="only the first N conversations (default: all)")
        parser.add_argument("--k", default="5,10", help="comma-separated cut-offs (default 5,10)")
        parser.add_argument("--modes", default="keyword,semantic,hybrid")
        parser.add_argument("--split", default="all", choices=SPLITS, help="questions of the dev or test half")
        parser.add_argument("--json", action="store_true", help="print the table as JSON")
        parser.add_argument("--dump", help="write each question's hybrid candidates to this JSON Lines file")
        parser.add_argument(
            "--keep",
            metavar="DIR",
            help="cache each imported conversation's database in DIR and reuse it on the next run, so a rerun "
            "only searches (SQLite only; an entry is used only for the same turns, migrations and model)",
        )

    def handle(self, *args, **opts):
        samples = _read(opts["path"])
        if opts["convs"] < 0:
            raise CommandError("--convs: a whole number of conversations, 0 for all")
        if opts["convs"]:
            samples = samples[: opts["convs"]]
        try:
            ks = sorted({int(k) for k in opts["k"].split(",") if k.strip()})
        except ValueError:
            raise CommandError("--k takes comma-separated whole numbers, e.g. 5,10") from None
        if not ks or ks[0] < 1 or ks[-1] > engine.LIMIT_MAX:
            raise CommandError(f"--k: each cut-off from 1 to {engine.LIMIT_MAX}")
        modes = [m.strip() for m in opts["modes"].split(",") if m.strip()]
        bad = [m for m in modes if m not in engine.MODES]
        if bad:
            raise CommandError(f"Unknown mode {', '.join(bad)}; allowed: {', '.join(engine.MODES)}.")
        embedder = get_embedder()
        # (split, mode, category, k, any|all) -> [found]
        hits: defaultdict[tuple[str, str, str, int, str], list[bool]] = defaultdict(list)
        times: defaultdict[str, list[float]] = defaultdict(list)  # mode -> per-search ms
        totals = {"turns": 0, "questions": 0, "no_evidence": 0, "unknown_evidence": 0, "import_s": 0.0}
        totals |= {"cached": 0, "imported": 0}  # conversations from --keep; turns imported (and timed)
        keep = _keep_folder(opts["keep"]) if opts["keep"] else None
        dump = open(opts["dump"], "w", encoding="utf-8") if opts["dump"] else nullcontext()  # noqa: SIM115
        quiet = [logging.getLogger(name) for name in ("reviews.actions", "retrieval.index")]
        levels = [log.level for log in quiet]
        for log in quiet:  # one line per approved turn would drown the table
            log.setLevel(logging.WARNING)
        with dump as out:
            for sample in samples:
                self._conversation(sample, modes, ks, opts["split"], embedder, hits, times, totals, out, keep)
        for log, level in zip(quiet, levels, strict=True):
            log.setLevel(level)
        table = _table(hits, modes, ks)
        if opts["json"]:
            self.stdout.write(json.dumps({"totals": totals, "recall": list(table.values())}))
            return
        self._print(table, modes, ks, times, totals, len(samples), opts["split"])

    def _conversation(self, sample, modes, ks, split, embedder, hits, times, totals, out, keep):
        turns = _turns(sample)
        questions = []
        for n, qa in enumerate(sample["qa"]):
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = qa.get("evidence") or []
            if not evidence:
                totals["no_evidence"] += 1
                continue
            qid = f"{sample['sample_id']}:{n}"
            if in_split(qid, split):
                questions.append((qid, qa, evidence))
        with scratch_database():
            cached = _cache_entry(keep, sample["sample_id"], turns, embedder) if keep else None
            if cached is not None and cached.with_suffix(".json").exists():
                record_of = _restore(cached, embedder)
                totals["cached"] += 1
            else:
                reviewer = scratch_reviewer()
                started = time.perf_counter()
                rows = [(n, fields) for n, (_dia, fields) in enumerate(turns, 1)]
                result = actions.import_records(rows, reviewer=reviewer, reason="LoCoMo benchmark")
                if result.errors:
                    raise CommandError(f"{sample['sample_id']}: turns refused by the import: {result.errors[:3]}")
                record_of = {dia: public_id for (dia, _f), public_id in zip(turns, result.created, strict=True)}
                index.sync(embedder, batch=256)  # usually done already, as the import committed
                totals["import_s"] += time.perf_counter() - started
                totals["imported"] += len(turns)
                if cached is not None:
                    _store(cached, record_of)
            totals["turns"] += len(turns)
            reader, limit = Reader.everything(), max(ks)
            public_ids = {}
            if out is not None:
                from reviews.models import Record

                public_ids = {pk: pid for pk, pid in Record.objects.values_list("pk", "public_id")}
            desc = f"{sample['sample_id']} questions"
            for qid, qa, evidence in tqdm(questions, desc=desc, file=sys.stderr, disable=None):
                gold = {record_of[e] for e in evidence if e in record_of}
                totals["unknown_evidence"] += sum(1 for e in evidence if e not in record_of)
                totals["questions"] += 1
                category = CATEGORIES[qa["category"]]
                for mode in modes:
                    response = engine.search(
                        qa["question"], mode=mode, limit=limit, reader=reader, embedder=embedder, count_access=False
                    )
                    times[mode].append(response.took_ms)
                    ids = [hit.record.public_id for hit in response.results]
                    for k in ks:
                        top = set(ids[:k])
                        # An evidence id that names no turn can never be found: a miss for "all".
                        found_all = gold <= top and len(gold) == len(set(evidence))
                        for part in {split_of(qid), "all"}:
                            for cat in (category, "all"):
                                hits[(part, mode, cat, k, "any")].append(bool(gold & top))
                                hits[(part, mode, cat, k, "all")].append(found_all)
                if out is not None:
                    dump_candidates(out, qid, qa["question"], sorted(gold), category, embedder, public_ids)

    def _print(self, table, modes, ks, times, totals, convs, split):
        w = self.stdout.write
        w(
            f"LoCoMo: {convs} conversations, {totals['turns']} turns, {totals['questions']} questions "
            f"(split: {split}); left out {totals['no_evidence']} without evidence; "
            f"{totals['unknown_evidence']} evidence ids match no turn (counted as misses)"
        )
        if totals["cached"]:
            w(f"{totals['cached']} of {convs} conversations from the --keep cache (not imported, not timed)")
        if totals["imported"]:
            w(
                f"import (proposed, approved and embedded): {totals['imported']} turns in {totals['import_s']:.1f} s, "
                f"{totals['imported'] / totals['import_s']:.0f} turns/s"
            )
        cuts = [f"{kind}@{k}" for k in ks for kind in ("any", "all")]
        parts = ["dev", "test", "all"] if split == "all" else [split]
        w(f"{'split':<5} {'category':<12} {'n':>5} {'mode':<9} " + " ".join(f"{c:>7}" for c in cuts))
        for part in parts:
            for category in [*CATEGORIES.values(), "all"]:
                for mode in modes:
                    row = table.get((part, mode, category))
                    if row is not None:
                        cells = [f"{row[c]:7.1%}" for c in cuts]
                        w(f"{part:<5} {category:<12} {row['n']:>5} {mode:<9} " + " ".join(cells))
        w("search time per query (ms): " + ", ".join(f"{m} p50 {_median(times[m]):.1f}" for m in modes))


def _median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0.0


def _table(hits, modes, ks):
    table: dict[tuple[str, str, str], dict[str, Any]] = {}
    for (part, mode, category, k, kind), values in hits.items():
        row = table.setdefault((part, mode, category), {"split": part, "mode": mode, "category": category})
        row["n"] = len(values)
        row[f"{kind}@{k}"] = sum(values) / len(values)
    return dict(sorted(table.items()))


def _turns(sample):
    """[(dia_id, record fields)] in conversation order."""
    conversation = sample["conversation"]
    sessions = sorted(
        (int(m.group(1)), value)
        for key, value in conversation.items()
        if (m := _SESSION.fullmatch(key)) and isinstance(value, list)
    )
    turns = []
    for number, session in sessions:
        when = conversation.get(f"session_{number}_date_time", "an unknown date")
        for turn in session:
            body = f"On {when}, {turn['speaker']} said: {turn['text']}"
            if turn.get("blip_caption"):
                body += f" [shares a photo: {turn['blip_caption']}]"
            fields = {
                "kind": "event",
                "space": "personal",
                "title": f"{turn['speaker']}, session {number}, turn {turn['dia_id']}",
                "body": body,
                "tags": [sample["sample_id"]],
            }
            turns.append((turn["dia_id"], fields))
    return turns


def _keep_folder(path: str) -> Path:
    if not database_engine(connection).is_file:
        raise CommandError("--keep caches SQLite files; on PostgreSQL run without it.")
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"--keep {path}: cannot make the folder: {exc.strerror}") from None
    return folder


def _cache_entry(folder: Path, sample_id: str, turns, embedder) -> Path:
    """The cache file for one conversation. Its name carries a hash of
    everything the imported database depends on: the turns as mapped, the
    migrations on disk, the index's schema version and the model, so an entry
    made by other code or data is never reused (it is simply not found)."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    key = json.dumps(
        [turns, sorted(loader.disk_migrations), index.SCHEMA_VERSION, embedder.name, embedder.dimension],
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    safe = re.sub(r"[^\w.-]", "_", sample_id)
    return folder / f"{safe}-{digest}.sqlite3"


def _store(entry: Path, record_of: dict[str, str]) -> None:
    """Copy the scratch database (complete: the import and the sync have
    committed) and then its turn map: the map is written last, so a run cut
    short leaves no entry that looks complete."""
    connection.close()
    shutil.copyfile(connection.settings_dict["NAME"], entry)
    entry.with_suffix(".json").write_text(json.dumps(record_of), encoding="utf-8")


def _restore(entry: Path, embedder) -> dict[str, str]:
    """Put a cached database in place of the fresh scratch one (a copy, so
    searching, which may sweep or sync, never changes the cache)."""
    connection.close()
    shutil.copyfile(entry, connection.settings_dict["NAME"])
    call_command("migrate", verbosity=0, interactive=False)
    index.sync(embedder, batch=256)
    record_of: dict[str, str] = json.loads(entry.with_suffix(".json").read_text(encoding="utf-8"))
    return record_of


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            samples = json.load(handle)
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}: not JSON: {exc}") from None
    if not isinstance(samples, list) or not all(
        isinstance(s, dict) and {"sample_id", "conversation", "qa"} <= set(s) for s in samples
    ):
        raise CommandError(f"{path}: not LoCoMo's locomo10.json (a list of {{sample_id, conversation, qa}})")
    return samples
