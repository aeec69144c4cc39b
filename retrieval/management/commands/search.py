import json
import sys

from django.core.management.base import BaseCommand, CommandError

from retrieval import search as engine
from retrieval.cli import add_search_arguments, filters_from, moment_from, reader_from
from retrieval.index import IndexModelMismatch
from reviews.errors import VettedError


class Command(BaseCommand):
    help = (
        "Search approved memory with the same engine and gate agents use. "
        "--queries FILE.jsonl runs many queries in one process: each line "
        '{"query": ..., "mode": ...} gives one JSON result line.'
    )

    def add_arguments(self, parser):
        parser.add_argument("query", nargs="?", help="what to search for")
        parser.add_argument("--queries", help="a JSON Lines file of queries, or - for standard input")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
        add_search_arguments(parser)

    def handle(self, *args, **opts):
        if bool(opts["query"]) == bool(opts["queries"]):
            raise CommandError('Give either a QUERY or --queries FILE.jsonl (e.g. search "deploy window").')
        reader, filters, moment = reader_from(opts), filters_from(opts), moment_from(opts)
        try:
            if opts["queries"]:
                return self._many(opts, reader, filters, moment)
            response = engine.search(
                opts["query"], mode=opts["mode"], limit=opts["limit"], filters=filters, reader=reader, moment=moment
            )
        except IndexModelMismatch as exc:
            raise CommandError(str(exc)) from None
        except VettedError as exc:
            raise CommandError(exc.message) from None
        finally:
            engine.access_counter.flush()
        if opts["json"]:
            self.stdout.write(
                json.dumps({**response.as_dict(), "took_ms": round(response.took_ms, 2)}, ensure_ascii=False)
            )
            return
        self._table(response)

    def _table(self, response):
        if not response.results:
            self.stdout.write("No results.")
        for rank, hit in enumerate(response.results, 1):
            r = hit.record
            extra = f"  (current version of {hit.successor_of})" if hit.successor_of else ""
            self.stdout.write(f"{rank:>2}. {hit.score:6.3f}  {r.public_id}  [{r.kind}/{r.space}] {r.title}{extra}")
        withheld = ", ".join(f"{reason}: {n}" for reason, n in sorted(response.withheld.items()))
        self.stdout.write(f"withheld: {withheld or 'none'}  ({response.took_ms:.1f} ms, {response.mode})")

    def _many(self, opts, reader, filters, moment):
        stream = sys.stdin if opts["queries"] == "-" else open(opts["queries"], encoding="utf-8")  # noqa: SIM115
        with stream:
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                    if not isinstance(item, dict):
                        raise ValueError("must be a JSON object")
                    response = engine.search(
                        item.get("query") or "",  # a missing query is refused by name, like an empty one
                        mode=item.get("mode", opts["mode"]),
                        limit=item.get("limit", opts["limit"]),
                        filters=filters,
                        reader=reader,
                        moment=moment,
                    )
                    out = {"line": number, **response.as_dict(), "took_ms": round(response.took_ms, 2)}
                except (ValueError, VettedError) as exc:
                    message = exc.message if isinstance(exc, VettedError) else str(exc)
                    out = {"line": number, "error": message}
                self.stdout.write(json.dumps(out, ensure_ascii=False))
