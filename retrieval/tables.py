"""The tables retrieval owns, by name, and its partitions: engine-neutral.

What is indexed is the *approved* content of each record, never the current
row: ``retrieval_doc`` holds, per record, the text, kind and space that its
approval checksum covers (copied by index.reconcile() only after checking
that checksum). A record edited out of band keeps its last approved text here
and is marked ``edited``; text nobody approved is never indexed anywhere, so
no score, count or candidate can depend on it.

Every document is in exactly one partition: its (approved) space, and its
state, ``live`` (deliverable as of the last reconcile) or ``held`` (withheld:
retired, superseded, disputed, edited, overdue, outside its validity window).
Each partition has its own keyword index, so a query reads only the spaces
its reader may read, and the deliverable ones apart from the withheld ones.

Each engine makes these tables in its own terms (retrieval/engines/:
SQLite's FTS5 tables and vec0, PostgreSQL's tsvector, pg_trgm and pgvector).
"""

import hashlib
import re
from collections.abc import Iterable

from django.db.backends.utils import CursorWrapper

from reviews.models import SPACES

RECORD_TABLE = "reviews_record"
DOCS = "retrieval_doc"
QUEUE = "retrieval_queue"
CHUNKS = "retrieval_chunk"
DIRTY = "retrieval_dirty"
META = "retrieval_meta"
VEC = "retrieval_vec"

LIVE, HELD = "live", "held"
STATES = (LIVE, HELD)


# Spaces: every space has its own partitions, named by
# ``partition_key``: the slug itself when it is a plain word (the three spaces
# every database has keep the table names they always had), else a digest of
# it (slugs such as ``personal:alice`` or ``north-rail`` are not SQL names).
# A space's tables are made when the space is (apps.py) and by create_all.
BASE_SPACES = tuple(SPACES)
_PLAIN = re.compile(r"[a-z0-9]+")


def partition_key(space: str) -> str:
    if _PLAIN.fullmatch(space):
        return space
    return "x_" + hashlib.sha256(space.encode("utf-8")).hexdigest()[:16]


def literal(space: str) -> str:
    """A space's slug inside a SQL string literal (partition SQL names its
    space as a literal, so that triggers and partial indexes can use it)."""
    return space.replace("'", "''")


def view(space: str, state: str) -> str:
    return f"retrieval_doc_{partition_key(space)}_{state}"


def fts(space: str, state: str) -> str:
    """The porter-stemmed keyword table of one partition."""
    return f"retrieval_fts_{partition_key(space)}_{state}"


def ident(space: str, state: str) -> str:
    """The trigram (identifier) table of one partition."""
    return f"retrieval_ident_{partition_key(space)}_{state}"


def partitions(spaces: Iterable[str]) -> list[tuple[str, str]]:
    return [(space, state) for space in spaces for state in STATES]


# The partitions every database has (the fixed spaces before spaces).
PARTITIONS = partitions(BASE_SPACES)


# What reconcile() reads: the approved text and everything "deliverable" depends on.
WATCHED = (
    "title",
    "body",
    "tags",
    "kind",
    "space",
    "status",
    "review_by",
    "valid_from",
    "valid_until",
    "approved_checksum",
)


def current_spaces(cursor: CursorWrapper) -> list[str]:
    """Every space that has or may get documents: the base three, every
    space in reviews_space, and any space already filed in retrieval_doc."""
    found = set(BASE_SPACES)
    tables = set(cursor.db.introspection.table_names(cursor)) & {"reviews_space", DOCS}
    if "reviews_space" in tables:
        cursor.execute("SELECT slug FROM reviews_space")
        found |= {row[0] for row in cursor.fetchall()}
    if DOCS in tables and not index_waits(cursor):
        cursor.execute(f"SELECT DISTINCT space FROM {DOCS}")
        found |= {row[0] for row in cursor.fetchall()}
    return [*BASE_SPACES, *sorted(found - set(BASE_SPACES))]


def wanted_spaces(cursor: CursorWrapper, spaces: Iterable[str] | None = None) -> list[str]:
    """Every current space, and ``spaces`` besides (a space being made)."""
    wanted = current_spaces(cursor)
    return wanted + [s for s in spaces or () if s not in wanted]


# The space's column before the rename (reviews 0011, retrieval 0006); a
# database migrated back before them still uses it.
OLD_NAME = "scope"


def _columns(cursor: CursorWrapper, table: str) -> set[str]:
    if table not in set(cursor.db.introspection.table_names(cursor)):
        return set()
    # The names only, from an empty result: Django's get_table_description
    # parses the whole table (constraints, collations, JSON checks), 68 ms for
    # reviews_record on SQLite, and this runs for every space made and after
    # every flush (a third of a transactional test's teardown).
    cursor.execute(f"SELECT * FROM {table} WHERE 1 = 0")
    return {column[0] for column in cursor.description}


def index_waits(cursor: CursorWrapper) -> bool:
    """True while retrieval_doc still calls its space column by the old name
    (retrieval 0006 has not run, or was undone): the partitions and triggers
    name today's column, so nothing is made until 0006 renames it."""
    return OLD_NAME in _columns(cursor, DOCS)


def record_triggers_wait(cursor: CursorWrapper) -> bool:
    """True while reviews_record still calls its space column by the old name
    (reviews 0011 has not run): the index's triggers on it name today's column,
    so the migrations before the rename, which build the index from the
    current layout, must not make them yet; post_migrate makes them once the
    column is renamed (retrieval/apps.py)."""
    return OLD_NAME in _columns(cursor, RECORD_TABLE)
