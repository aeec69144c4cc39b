"""`records list` and `records read ID`: what a reader of some spaces receives,
through the same gate as agents, now or at a past moment (--as-of, --valid-at)."""

import json

from django.core.management.base import BaseCommand, CommandError

from retrieval.asof import list_at, read_at
from retrieval.cli import moment_from, reader_from
from retrieval.gate import read_record
from retrieval.record_shapes import record_full
from reviews.errors import VettedError
from reviews.history import Moment


class Command(BaseCommand):
    help = "List or read records as a reader of some spaces receives them, now or as of a past moment."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        for name, text in (("list", "deliverable records, newest approval first"), ("read", "one record")):
            p = sub.add_parser(name, help=text)
            if name == "read":
                p.add_argument("id", help="a record id (rec_...)")
            else:
                p.add_argument("--limit", type=int, default=20)
                p.add_argument("--kind", action="append", default=[], help="only these kinds; repeatable")
            p.add_argument("--space", action="append", default=[], help="read as a reader of these spaces; default all")
            p.add_argument("--as-of", help="as received at this past moment (date = the end of that day, or date-time)")
            p.add_argument("--valid-at", help="judge validity windows on this day (YYYY-MM-DD)")
            p.add_argument("--json", action="store_true", help="print JSON instead of lines")

    def handle(self, *args, **opts):
        reader, moment = reader_from(opts), moment_from(opts)
        if opts["subcommand"] == "read":
            return self._read(opts, reader, moment)
        if not 1 <= opts["limit"] <= 100:
            raise CommandError(f"--limit must be from 1 to 100, not {opts['limit']}.")
        rows = list_at(
            reader,
            moment or Moment(),
            spaces=sorted(reader.spaces),
            kinds=opts["kind"],
            tags_all=[],
            limit=opts["limit"],
        )
        if opts["json"]:
            records = [record_full(r, reader.spaces) for r in rows]
            self.stdout.write(json.dumps({"records": records, **(moment.as_dict() if moment else {})}))
            return
        for r in rows:
            self.stdout.write(f"{r.public_id}  [{r.kind}/{r.space}] {r.title}  (approved {r.approved_at:%Y-%m-%d})")
        if not rows:
            self.stdout.write("No records.")

    def _read(self, opts, reader, moment):
        try:
            result = read_at(opts["id"], reader, moment) if moment else read_record(opts["id"], reader)
        except VettedError as exc:
            raise CommandError(exc.message) from None
        data = {
            "id": result.public_id,
            "deliverable": result.record is not None,
            **(moment.as_dict() if moment else {}),
        }
        if result.record is not None:
            data["record"] = record_full(result.record, reader.spaces)
        else:
            data["withheld"] = result.withheld
            if result.successor is not None:
                data["current_version"] = result.successor.public_id
        if opts["json"]:
            self.stdout.write(json.dumps(data, ensure_ascii=False))
        elif result.record is not None:
            self.stdout.write(f"{result.public_id}  {result.record.title}\n\n{result.record.body}")
        else:
            extra = f"; read {data['current_version']} instead" if "current_version" in data else ""
            self.stdout.write(f"{result.public_id}: withheld ({result.withheld}){extra}")
