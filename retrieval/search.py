"""Hybrid search: keyword (FTS5 BM25 + exact identifiers) and vectors, fused, then gated.

Fusion. Plain rank fusion (RRF) lets keyword's weak matches on common words
count as much as a strong vector match, and "keyword score + vector score"
lets the keyword hit win rank 1 even when the vector ranker is right. Here the
keyword side contributes *evidence of exactness*, not a rank:

    hybrid = cosine(query, best chunk)
           + KEYWORD_WEIGHT * coverage ** KEYWORD_POWER
           + IDENT_WEIGHT * identifiers_matched

- coverage: the idf-weighted share of the query's content words that the
  record contains (0..1). Matching only common words gives little; matching
  every rare word of a short query gives the full weight. The fourth power
  makes partial matches count for little (half the words: 1/16 of the
  weight), which is what keeps one shared word from overruling the vector
  ranker on paraphrases.
- identifiers_matched: the share of identifier-looking query tokens
  (acme/billing-api, ACME-1234, 21.0.3, STRIPE_WEBHOOK_SECRET, --dry-run)
  that the record contains verbatim, as whole tokens.
BM25 itself is not in the hybrid score: normalised BM25 always gives the best
keyword match full marks, however weak, which is the failure described above.
So paraphrases (no shared words) rank by the vector alone, exact keyword and
identifier queries are decided by exact evidence, and questions combine both.
The weights were set on tests/data (see `manage.py eval_retrieval`).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from reviews.errors import ValidationFailed
from reviews.models import Record

from . import index, schema, vectors
from .embeddings import Embedder, get_embedder
from .gate import Reader, current_successor, withhold_reason

MODES = ("hybrid", "keyword", "semantic")
LIMIT_MAX = 50
QUERY_MAX_CHARS = 2000
TERMS_MAX = 24

# Set on tests/data with `manage.py eval_retrieval`: hybrid rank-1 stays at or
# above the better single ranker for every query type for KEYWORD_WEIGHT in
# 0.2-0.25 and KEYWORD_POWER in 3-5 (a plateau, not a knife edge).
KEYWORD_WEIGHT = 0.25
KEYWORD_POWER = 4.0
IDENT_WEIGHT = 1.0
# A candidate found only by the vector ranker, with less similarity than this,
# is noise, not an answer (MiniLM puts unrelated texts around 0.0-0.15).
MIN_VECTOR_ONLY = 0.2
BODY_CHUNK_OVER = 1500  # longer bodies are returned as their best chunk

_WORD_RE = re.compile(r"[^\W_]+")
# Identifier-looking tokens: CLI flags, and tokens joined by - _ / . : that
# carry a digit, an underscore, a slash, a dot or a colon, or capitals
# (acme/billing-api, 21.0.3, STRIPE_WEBHOOK_SECRET, ACME-1234, --dry-run).
# Lowercase hyphenated words ("one-time", "pre-prod") are ordinary compounds
# in a sentence, but names (acme-money, billing-worker) in a short query.
_IDENT_RE = re.compile(r"(?<![\w-])(?:--?[A-Za-z][\w-]*|[\w@]+(?:[-_/.:][\w@]+)+|[A-Za-z]+\d+\w*|\d+[A-Za-z]+\w*)")


def _looks_like_identifier(token: str, short_query: bool) -> bool:
    if short_query and "-" in token.strip("-"):
        return True
    if token.startswith("-"):
        return True
    if re.search(r"[\d_/.:@]", token):
        return True
    return sum(1 for ch in token if ch.isupper()) >= 2


STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "what's", "whats", "we're", "don't", "do", "does", "use", "used", "using", "get", "got", "one", "also", "i'm"]
)


@dataclass
class Filters:
    kinds: list[str] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    tags_any: list[str] = field(default_factory=list)
    tags_all: list[str] = field(default_factory=list)
    agent: str = ""
    approved_after: date | None = None
    approved_before: date | None = None
    verified_after: date | None = None
    verified_before: date | None = None
    min_confidence: float | None = None

    def matches(self, record: Record) -> bool:
        if self.kinds and record.kind not in self.kinds:
            return False
        if self.scopes and record.scope not in self.scopes:
            return False
        tags = set(record.tags or [])
        if self.tags_any and not tags.intersection(self.tags_any):
            return False
        if self.tags_all and not set(self.tags_all) <= tags:
            return False
        if self.agent and (record.proposed_by is None or record.proposed_by.name != self.agent):
            return False
        approved = timezone.localdate(record.approved_at) if record.approved_at else None
        if self.approved_after and (approved is None or approved < self.approved_after):
            return False
        if self.approved_before and (approved is None or approved > self.approved_before):
            return False
        verified = timezone.localdate(record.verified_at) if record.verified_at else None
        if self.verified_after and (verified is None or verified < self.verified_after):
            return False
        if self.verified_before and (verified is None or verified > self.verified_before):
            return False
        if self.min_confidence is not None and (record.confidence is None or record.confidence < self.min_confidence):
            return False
        return True


@dataclass
class Hit:
    record: Record
    score: float
    vector: float
    coverage: float
    identifiers: float
    chunk_id: int | None = None
    chunk: str = ""  # the best chunk's text, filled in for delivered long bodies
    successor_of: str = ""  # set when surfaced in place of a superseded record

    def as_dict(self) -> dict:
        r = self.record
        long_body = len(r.body) > BODY_CHUNK_OVER and self.chunk
        data = {
            "id": r.public_id,
            "title": r.title,
            "kind": r.kind,
            "scope": r.scope,
            "tags": r.tags,
            "body": _strip_title(self.chunk, r.title) if long_body else r.body,
            "body_is_excerpt": bool(long_body),
            "approved_at": r.approved_at.isoformat() if r.approved_at else None,
            "verified_at": r.verified_at.isoformat() if r.verified_at else None,
            "review_by": r.review_by.isoformat(),
            "score": round(self.score, 4),
        }
        if self.successor_of:
            data["supersedes"] = self.successor_of
        return data


@dataclass
class SearchResponse:
    query: str
    mode: str
    results: list[Hit]
    withheld: dict[str, int]
    took_ms: float = 0.0

    def as_dict(self) -> dict:
        return {
            "query": self.query,
            "mode": self.mode,
            "results": [hit.as_dict() for hit in self.results],
            "withheld": self.withheld,
            "withheld_total": sum(self.withheld.values()),
        }


def _strip_title(chunk: str, title: str) -> str:
    head, sep, rest = chunk.partition("\n\n")
    return rest if sep and head.startswith(title) else chunk


# --------------------------------------------------------------------------- query parsing


def query_terms(query: str) -> list[str]:
    """Lowercase content words, deduplicated, in order; stopwords dropped
    unless nothing else is left."""
    words = [w.lower() for w in _WORD_RE.findall(query)]
    content = [w for w in words if w not in STOPWORDS]
    chosen = content or words
    seen: list[str] = []
    for word in chosen:
        if word not in seen:
            seen.append(word)
    return seen[:TERMS_MAX]


def query_identifiers(query: str) -> list[str]:
    found = []
    short_query = len(query.split()) <= 3
    for match in _IDENT_RE.findall(query):
        token = match.strip(".:/")
        if not _looks_like_identifier(token, short_query):
            continue
        if len(token) >= 3 and token.lower() not in (f.lower() for f in found):
            found.append(token)
    return found[:8]


def fts_or_query(terms: list[str]) -> str:
    # Every term is a double-quoted FTS5 string: operators (AND, NEAR, *, -,
    # parentheses, column filters) in user text stay plain text. Terms come
    # from _WORD_RE, so they hold no quote characters.
    return " OR ".join(f'"{term}"' for term in terms)


def fts_string(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _contains_identifier(text: str, ident: str) -> bool:
    """``ident`` stands in ``text`` as a whole token: 21.0.3 is not in 21.0.3.1
    or 1.21.0.3, ACME-1234 is not in ACME-12345; a path prefix is fine
    (acme/billing-api in github.com/acme/billing-api)."""
    pattern = r"(?<!\w)(?<!\w[-.])" + re.escape(ident.lower()) + r"(?!\w|[-/.]\w)"
    return re.search(pattern, text.lower()) is not None


# --------------------------------------------------------------------------- document frequencies


class _DocFreq:
    """Cached per-word document counts (idf), invalidated when records change."""

    def __init__(self):
        self._lock = threading.Lock()
        self._key = None
        self._counts: dict[str, int] = {}
        self._total = 0

    def idf(self, cursor, words: list[str]) -> dict[str, float]:
        # max(id) is one index probe; count(*) is a table scan, so the total
        # is recounted only when records were added (they are never deleted
        # in normal use; text edits shift counts too little to matter).
        cursor.execute(f"SELECT coalesce(max(id), 0) FROM {schema.RECORD_TABLE}")
        key = cursor.fetchone()[0]
        with self._lock:
            stale = key != self._key
        if stale:
            cursor.execute(f"SELECT count(*) FROM {schema.RECORD_TABLE}")
            total = cursor.fetchone()[0]
            with self._lock:
                self._key, self._counts, self._total = key, {}, total
        # Work on a local copy: another request thread may reset the shared
        # cache at any moment (a KeyError here was a 500 under `stress`).
        with self._lock:
            known = {w: self._counts[w] for w in words if w in self._counts}
            total = self._total
        for word in words:
            if word in known:
                continue
            cursor.execute(f"SELECT count(*) FROM {schema.FTS} WHERE {schema.FTS} MATCH %s", [fts_string(word)])
            known[word] = cursor.fetchone()[0]
        with self._lock:
            if self._key == key:
                if len(self._counts) > 50_000:
                    self._counts.clear()
                self._counts.update(known)
        n = max(total, 1)
        return {w: math.log(1 + (n - known[w] + 0.5) / (known[w] + 0.5)) for w in words}


_docfreq = _DocFreq()


# --------------------------------------------------------------------------- access counts


class _AccessCounter:
    """Batches access-count increments so searches do not each take the write lock."""

    def __init__(self, flush_every: float = 2.0):
        self._lock = threading.Lock()
        self._pending: Counter[int] = Counter()
        self._last = time.monotonic()
        self.flush_every = flush_every

    def add(self, record_ids: list[int]) -> None:
        with self._lock:
            self._pending.update(record_ids)
            due = time.monotonic() - self._last >= self.flush_every
        if due:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, Counter()
            self._last = time.monotonic()
        if not pending:
            return
        with connection.cursor() as cursor:
            # Raw SQL on purpose: a counter bump is not a change of what is
            # true, so it has no audit event, leaves updated_at alone and (as
            # it does not touch title/body/tags) fires no index trigger.
            for count in set(pending.values()):
                ids = [rid for rid, c in pending.items() if c == count]
                marks = ",".join(["%s"] * len(ids))
                cursor.execute(
                    f"UPDATE {schema.RECORD_TABLE} SET access_count = access_count + %s WHERE id IN ({marks})",
                    [count, *ids],
                )


access_counter = _AccessCounter()


# --------------------------------------------------------------------------- candidates


@dataclass
class _Candidate:
    vector: float | None = None
    chunk_id: int | None = None
    bm25: float = 0.0
    coverage: float = 0.0
    identifiers: float = 0.0
    keyword_hit: bool = False


def _keyword_candidates(cursor, terms: list[str], k: int) -> dict[int, float]:
    if not terms:
        return {}
    # Column weights: title 10, body 1, tags 5. bm25() is lower-is-better.
    cursor.execute(
        f"SELECT rowid, -bm25({schema.FTS}, 10.0, 1.0, 5.0) AS s FROM {schema.FTS} "
        f"WHERE {schema.FTS} MATCH %s ORDER BY s DESC LIMIT %s",
        [fts_or_query(terms), k],
    )
    return {rowid: score for rowid, score in cursor.fetchall()}


def _identifier_candidates(cursor, identifiers: list[str], k: int) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for ident in identifiers:
        # Trigram MATCH of a quoted string is a case-insensitive substring
        # search; the boundary check happens on the re-read row later.
        cursor.execute(
            f"SELECT rowid FROM {schema.FTS_IDENT} WHERE {schema.FTS_IDENT} MATCH %s LIMIT %s",
            [fts_string(ident), k],
        )
        for (rowid,) in cursor.fetchall():
            found.setdefault(rowid, set()).add(ident)
    return found


def nearest_chunks(cursor, query_vector: np.ndarray, k: int) -> tuple[dict[int, tuple[float, int]], int]:
    """Best chunk per record among the ``k`` nearest chunks {record_id:
    (similarity, chunk_id)}, and how many chunks were considered."""
    if settings.VETTED_VECTOR_CACHE:
        snap = vectors.cache.current(cursor, len(query_vector))
        return vectors.nearest(snap, query_vector, k)
    cursor.execute(
        f"SELECT v.rowid, v.distance, c.record_id FROM "
        f"(SELECT rowid, distance FROM {schema.VEC} WHERE embedding MATCH %s AND k = %s) v "
        f"JOIN {schema.CHUNKS} c ON c.id = v.rowid",
        [query_vector.astype(np.float32).tobytes(), min(k, index.KNN_MAX)],
    )
    rows = cursor.fetchall()
    best: dict[int, tuple[float, int]] = {}
    for chunk_id, distance, record_id in rows:
        similarity = 1.0 - float(distance)  # cosine distance -> similarity
        if record_id not in best or similarity > best[record_id][0]:
            best[record_id] = (similarity, chunk_id)
    return best, len(rows)


def _vectors_for(cursor, record_ids: list[int], query_vector: np.ndarray) -> dict[int, tuple[float, int]]:
    """Best-chunk similarity for records the KNN did not return (keyword-only hits)."""
    if not record_ids:
        return {}
    if settings.VETTED_VECTOR_CACHE:
        snap = vectors.cache.current(cursor, len(query_vector))
        return vectors.best_for(snap, record_ids, query_vector)
    marks = ",".join(["%s"] * len(record_ids))
    cursor.execute(f"SELECT record_id, id, embedding FROM {schema.CHUNKS} WHERE record_id IN ({marks})", record_ids)
    best: dict[int, tuple[float, int]] = {}
    for record_id, chunk_id, blob in cursor.fetchall():
        if blob is None:
            continue
        similarity = float(np.dot(np.frombuffer(blob, dtype=np.float32), query_vector))
        if record_id not in best or similarity > best[record_id][0]:
            best[record_id] = (similarity, chunk_id)
    return best


def _coverage(cursor, terms: list[str], candidate_ids: list[int]) -> dict[int, float]:
    """idf-weighted share of the query's words each candidate contains."""
    if not terms or not candidate_ids:
        return {}
    idf = _docfreq.idf(cursor, terms)
    total = sum(idf.values()) or 1.0
    # The candidates go into a per-connection temp table with an integer
    # primary key: SQLite then walks each term's doclist and probes the
    # candidates by key (0.7 ms for 6 terms x 100 candidates at 10k records).
    # `rowid IN (...)` or a json_each() join makes FTS5 evaluate the MATCH
    # once per candidate instead (10x slower).
    cursor.execute("CREATE TEMP TABLE IF NOT EXISTS retrieval_candidates (id INTEGER PRIMARY KEY)")
    cursor.execute("DELETE FROM temp.retrieval_candidates")
    cursor.executemany("INSERT INTO temp.retrieval_candidates (id) VALUES (%s)", [(rowid,) for rowid in candidate_ids])
    covered: Counter[int] = Counter()
    for term in terms:
        cursor.execute(
            f"SELECT f.rowid FROM {schema.FTS} f JOIN temp.retrieval_candidates c ON c.id = f.rowid "
            f"WHERE {schema.FTS} MATCH %s",
            [fts_string(term)],
        )
        for (rowid,) in cursor.fetchall():
            covered[rowid] += idf[term]
    return {rowid: weight / total for rowid, weight in covered.items()}


# --------------------------------------------------------------------------- search


def _whole_number(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def validate(query, mode, limit) -> tuple[str, str, int]:
    errors = {}
    # NUL and other control characters carry no meaning in a query.
    clean = re.sub(r"[\x00-\x1f\x7f]", " ", query).strip()[:QUERY_MAX_CHARS] if isinstance(query, str) else ""
    if not clean:
        errors["query"] = "required: the words to search for"
    if mode not in MODES:
        errors["mode"] = f"got {mode!r}; allowed: {', '.join(MODES)}"
    number = _whole_number(limit)
    if number is None or not 1 <= number <= LIMIT_MAX:
        errors["limit"] = f"got {limit!r}; a whole number from 1 to {LIMIT_MAX}"
    if errors:
        raise ValidationFailed(errors)
    return clean, mode, number


def search(query: str, *, mode: str = "hybrid", filters: Filters | None = None, limit: int = 8,
           reader: Reader, embedder: Embedder | None = None, count_access: bool = True) -> SearchResponse:
    """Search approved memory as ``reader`` may see it.

    Returns at most ``limit`` deliverable records, best first, and the
    number of candidates withheld by reason (pending proposals are never in
    the index, so they can never appear). Candidates are over-fetched and the
    pool grows until ``limit`` records pass the gate or the indexes run out.
    """
    query, mode, limit = validate(query, mode, limit)
    filters = filters or Filters()
    if mode != "keyword":
        embedder = embedder or get_embedder()  # loaded once per process, not timed
    started = time.perf_counter()
    terms = query_terms(query)
    identifiers = query_identifiers(query)
    query_vector = None
    if mode != "keyword":
        index.sync(embedder)  # usually a no-op: one SELECT on an empty queue
        query_vector = embedder.embed_one(query)

    k = max(64, limit * 10)
    while True:
        with connection.cursor() as cursor:
            candidates, more = _gather(cursor, mode, terms, identifiers, query_vector, k)
        ranked = _rank(mode, candidates)
        results, withheld = _deliver(ranked, candidates, reader, filters, limit)
        if len(results) >= limit or not more or k >= index.KNN_MAX:
            break
        k = min(k * 4, index.KNN_MAX)

    _attach_chunks(results)
    if count_access and results:
        access_counter.add([hit.record.pk for hit in results])
    return SearchResponse(query=query, mode=mode, results=results, withheld=withheld,
                          took_ms=(time.perf_counter() - started) * 1000)


def _attach_chunks(results: list[Hit]) -> None:
    """Load the best chunk's text for delivered records long enough to be excerpted."""
    wanted = {hit.chunk_id: hit for hit in results if hit.chunk_id and len(hit.record.body) > BODY_CHUNK_OVER}
    if not wanted:
        return
    marks = ",".join(["%s"] * len(wanted))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, text FROM {schema.CHUNKS} WHERE id IN ({marks})", list(wanted))
        for chunk_id, text in cursor.fetchall():
            wanted[chunk_id].chunk = text


def _gather(cursor, mode, terms, identifiers, query_vector, k) -> tuple[dict[int, _Candidate], bool]:
    """Candidates from each ranker (at most ``k`` each) and whether any ranker
    may have more beyond ``k``."""
    candidates: dict[int, _Candidate] = {}
    more = False
    if mode in ("keyword", "hybrid"):
        keyword = _keyword_candidates(cursor, terms, k)
        more |= len(keyword) >= k
        for rowid, score in keyword.items():
            c = candidates.setdefault(rowid, _Candidate())
            c.bm25, c.keyword_hit = score, True
        found = _identifier_candidates(cursor, identifiers, k)
        more |= len(found) >= k
        for rowid, share in _verified_identifiers(cursor, found, identifiers).items():
            c = candidates.setdefault(rowid, _Candidate())
            c.identifiers, c.keyword_hit = share, True
    if mode in ("semantic", "hybrid"):
        vector, chunk_rows = nearest_chunks(cursor, query_vector, k)
        more |= chunk_rows >= min(k, index.KNN_MAX)
        for rowid, (similarity, chunk_id) in vector.items():
            c = candidates.setdefault(rowid, _Candidate())
            c.vector, c.chunk_id = similarity, chunk_id
    if mode == "hybrid":
        missing = [rowid for rowid, c in candidates.items() if c.vector is None]
        for rowid, (similarity, chunk_id) in _vectors_for(cursor, missing, query_vector).items():
            candidates[rowid].vector, candidates[rowid].chunk_id = similarity, chunk_id
        for rowid, share in _coverage(cursor, terms, list(candidates)).items():
            candidates[rowid].coverage = share
    return candidates, more


def _verified_identifiers(cursor, found: dict[int, set[str]], identifiers: list[str]) -> dict[int, float]:
    """Trigram MATCH finds substrings; keep identifiers that stand as whole tokens."""
    if not found:
        return {}
    ids = list(found)
    marks = ",".join(["%s"] * len(ids))
    cursor.execute(f"SELECT id, title, body, tags FROM {schema.RECORD_TABLE} WHERE id IN ({marks})", ids)
    shares = {}
    for rowid, title, body, tags in cursor.fetchall():
        text = f"{title}\n{body}\n{tags}"
        matched = sum(1 for ident in found[rowid] if _contains_identifier(text, ident))
        if matched:
            shares[rowid] = matched / len(identifiers)
    return shares


def _score(mode: str, c: _Candidate) -> float:
    if mode == "semantic":
        return c.vector or 0.0
    if mode == "keyword":
        # Exact identifiers first, then BM25.
        return c.identifiers * 1000.0 + c.bm25
    return (c.vector or 0.0) + KEYWORD_WEIGHT * c.coverage ** KEYWORD_POWER + IDENT_WEIGHT * c.identifiers


def _rank(mode: str, candidates: dict[int, _Candidate]) -> list[tuple[int, float]]:
    scored = []
    for rowid, c in candidates.items():
        if mode == "hybrid" and not c.keyword_hit and (c.vector or 0.0) < MIN_VECTOR_ONLY:
            continue
        scored.append((rowid, _score(mode, c)))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored


def _deliver(ranked, candidates, reader: Reader, filters: Filters, limit: int):
    """Walk the ranking, re-reading rows in small batches, until ``limit``
    records pass the gate. Returns (results, withheld counts by reason)."""
    today = timezone.localdate()
    results: list[Hit] = []
    delivered: set[int] = set()
    withheld: Counter[str] = Counter()
    batch = max(16, limit * 2)
    for start in range(0, len(ranked), batch):
        window = ranked[start:start + batch]
        rows = Record.objects.select_related("proposed_by").in_bulk([rowid for rowid, _ in window])
        for rowid, score in window:
            if len(results) >= limit:
                return results, dict(withheld)
            record = rows.get(rowid)
            if record is None or not reader.can_read(record) or not filters.matches(record):
                continue  # invisible to this reader, or not asked for: not "withheld"
            c = candidates[rowid]
            reason = withhold_reason(record, today)
            if reason is None:
                if rowid not in delivered:
                    delivered.add(rowid)
                    results.append(Hit(record, score, c.vector or 0.0, c.coverage, c.identifiers, chunk_id=c.chunk_id))
                continue
            withheld[reason] += 1
            if reason == "superseded":
                successor = current_successor(record, reader, today)
                if successor is not None and successor.pk not in delivered and filters.matches(successor):
                    delivered.add(successor.pk)
                    results.append(Hit(successor, score, c.vector or 0.0, c.coverage, c.identifiers,
                                       successor_of=record.public_id))
    return results[:limit], dict(withheld)
