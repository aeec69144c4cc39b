#!/usr/bin/env python3
"""Validate the retrieval evaluation set (eval_corpus.jsonl + eval_queries.jsonl).

Standard library only. Run it from anywhere:

    python3 tests/data/check_eval_set.py [--corpus PATH] [--queries PATH] [-v]

It prints a summary and exits non-zero if any rule is broken.

Corpus rules (one JSON object per line):
  * fields id, title, body, kind, space, tags; ids unique; no duplicate records
  * kind in fact|preference|procedure|decision|reference|event,
    space in team|personal|system
  * title: single line, 3-200 characters
  * body: 60-1200 characters, or a "long" body of 1500-4000 characters made
    of at least three "## " sections; at least 8 long bodies
  * body looks like prose: at least 3 distinct words, mostly letters
  * tags: at most 6, lowercase, matching [a-z0-9][a-z0-9._/:+-]*
  * at least 90 records

Query rules (one JSON object per line):
  * fields target, type, query; target exists; no duplicate queries
  * type in keyword|identifier|question|paraphrase, at least 60 of each
  * keyword: 2-4 words, each appearing as a word in the target, and no other
    record containing all of them
  * identifier: at most two words; the identifier token (the longest token
    containing a digit or one of _-/.: or being ALLCAPS) appears verbatim in
    the target and (case-insensitively) in no other record
  * question: ends with "?" and has at least four words
  * paraphrase: shares at most one content word with the target's
    title + body + tags (content word: lowercase alphabetic token of 3+
    letters, not a stopword; compared after naive stemming)
  * every long record has at least one keyword/identifier query whose terms
    are absent from its title and first section (answer in a later section)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent

KINDS = {"fact", "preference", "procedure", "decision", "reference", "event"}
SPACES = {"team", "personal", "system"}
QUERY_TYPES = ("keyword", "identifier", "question", "paraphrase")
MIN_RECORDS = 90
MIN_PER_TYPE = 60
MIN_LONG_BODIES = 8
TAG_RE = re.compile(r"^[a-z0-9][a-z0-9._/:+-]*$")

# Common English stopwords (the NLTK English list plus a few modal verbs).
STOPWORDS = frozenset(
    """
    a about above after again against ain all am an and any are aren aren't as at
    be because been before being below between both but by can couldn couldn't
    d did didn didn't do does doesn doesn't doing don don't down during each few
    for from further had hadn hadn't has hasn hasn't have haven haven't having he
    her here hers herself him himself his how i if in into is isn isn't it it's
    its itself just ll m ma me mightn mightn't more most mustn mustn't my myself
    needn needn't no nor not now o of off on once only or other our ours
    ourselves out over own re s same shan shan't she she's should should've
    shouldn shouldn't so some such t than that that'll the their theirs them
    themselves then there these they this those through to too under until up
    ve very was wasn wasn't we were weren weren't what when where which while
    who whom why will with won won't wouldn wouldn't y you you'd you'll you're
    you've your yours yourself yourselves
    would could may might must shall also
    """.split()
)

SUFFIXES = ("ing", "ed", "es", "s")


def stem_forms(word: str) -> frozenset[str]:
    """Naive stemming: the word with one trailing 's', 'es', 'ed' or 'ing'
    stripped. Because that is ambiguous ("rates" -> "rate" or "rat"), every
    single strip is kept, and each form is also normalised by dropping a final
    'e' and a doubled final consonant ("shipp" -> "ship"). Two words count as
    the same content word when their form sets intersect. This is never more
    lenient than picking one strip."""
    forms = {word}
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            forms.add(word[: -len(suffix)])
    normalised = set()
    for form in forms:
        if len(form) > 3 and form.endswith("e"):
            normalised.add(form[:-1])
        if len(form) > 3 and form[-1] == form[-2] and form[-1] not in "aeiou":
            normalised.add(form[:-1])
    return frozenset(forms | normalised)


def content_tokens(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 3 and w not in STOPWORDS}


def shared_content_words(query: str, target_text: str) -> list[str]:
    target_forms: set[str] = set()
    for token in content_tokens(target_text):
        target_forms |= stem_forms(token)
    return sorted(t for t in content_tokens(query) if stem_forms(t) & target_forms)


def record_text(rec: dict) -> str:
    return "\n".join([rec.get("title", ""), rec.get("body", ""), " ".join(rec.get("tags", []))])


STRIP_CHARS = "\"'`,;?!()[]{}<>"


def query_tokens(query: str) -> list[str]:
    tokens = []
    for raw in query.split():
        tok = raw.strip(STRIP_CHARS).rstrip(".:").strip(STRIP_CHARS)
        if tok:
            tokens.append(tok)
    return tokens


def is_identifier_like(tok: str) -> bool:
    if any(ch.isdigit() for ch in tok) or any(ch in "_-/.:" for ch in tok):
        return True
    letters = [ch for ch in tok if ch.isalpha()]
    return len(letters) >= 2 and tok.upper() == tok


def identifier_token(query: str) -> str | None:
    candidates = [t for t in query_tokens(query) if is_identifier_like(t)]
    if not candidates:
        return None
    return max(candidates, key=len)  # first of the longest on ties


def contains_word(text_lower: str, word: str) -> bool:
    return re.search(r"(?<![a-z0-9])" + re.escape(word) + r"(?![a-z0-9])", text_lower) is not None


def contains_verbatim(text: str, token: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(token) + r"(?![A-Za-z0-9_])", text) is not None


def prose_problem(body: str) -> str | None:
    compact = re.sub(r"\s+", "", body)
    words = [w.lower() for w in re.findall(r"[^\W\d_]{2,}", body)]
    if len(set(words)) < 3:
        return "fewer than 3 distinct words"
    letters = sum(ch.isalpha() for ch in compact)
    if letters / max(1, len(compact)) < 0.5:
        return f"only {letters / len(compact):.0%} letters"
    return None


def sections(body: str) -> list[str]:
    """Split a body at '## ' headings; element 0 is text before the first one."""
    return re.split(r"(?m)^## ", body)


def load_jsonl(path: Path, errors: list[str]) -> list[dict]:
    rows: list[dict] = []
    if not path.exists():
        errors.append(f"{path}: file not found")
        return rows
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            errors.append(f"{path.name}:{n}: blank line")
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{path.name}:{n}: invalid JSON ({exc})")
            continue
        if not isinstance(obj, dict):
            errors.append(f"{path.name}:{n}: not a JSON object")
            continue
        obj["_line"] = n
        rows.append(obj)
    return rows


def check_corpus(records: list[dict], errors: list[str]) -> dict[str, dict]:
    by_id: dict[str, dict] = {}
    seen_content: dict[tuple, str] = {}
    for rec in records:
        where = f"corpus line {rec['_line']}"
        missing = [f for f in ("id", "title", "body", "kind", "space", "tags") if f not in rec]
        if missing:
            errors.append(f"{where}: missing fields {missing}")
            continue
        rid = rec["id"]
        where = f"record {rid}"
        if not isinstance(rid, str) or not re.fullmatch(r"r\d{3,}", rid):
            errors.append(f"{where}: id should look like r001")
        if rid in by_id:
            errors.append(f"{where}: duplicate id")
        by_id[rid] = rec
        title, body, tags = rec["title"], rec["body"], rec["tags"]
        if not isinstance(title, str) or "\n" in title or not 3 <= len(title.strip()) <= 200 or title != title.strip():
            errors.append(f"{where}: title must be one trimmed line of 3-200 characters")
        if not isinstance(body, str):
            errors.append(f"{where}: body must be a string")
            continue
        n = len(body)
        heads = len(re.findall(r"(?m)^## ", body))
        if 60 <= n <= 1200:
            pass
        elif 1500 <= n <= 4000:
            if heads < 3:
                errors.append(f"{where}: long body ({n} chars) needs at least three '## ' sections, has {heads}")
        else:
            errors.append(f"{where}: body is {n} characters; allowed 60-1200 or 1500-4000 (long, sectioned)")
        problem = prose_problem(body)
        if problem:
            errors.append(f"{where}: body does not look like prose: {problem}")
        if rec["kind"] not in KINDS:
            errors.append(f"{where}: kind {rec['kind']!r} not in {sorted(KINDS)}")
        if rec["space"] not in SPACES:
            errors.append(f"{where}: space {rec['space']!r} not in {sorted(SPACES)}")
        if not isinstance(tags, list) or len(tags) > 6:
            errors.append(f"{where}: tags must be a list of at most 6")
        else:
            for tag in tags:
                if not isinstance(tag, str) or not TAG_RE.match(tag) or len(tag) > 50:
                    errors.append(f"{where}: bad tag {tag!r}")
            if len(set(tags)) != len(tags):
                errors.append(f"{where}: repeated tag")
        key = (title.strip().lower(), body.strip())
        if key in seen_content:
            errors.append(f"{where}: same title and body as {seen_content[key]}")
        seen_content[key] = rid
    titles = Counter(r["title"].strip().lower() for r in records if "title" in r)
    for title, count in titles.items():
        if count > 1:
            errors.append(f"title used by {count} records: {title!r}")
    bodies = Counter(r["body"].strip() for r in records if isinstance(r.get("body"), str))
    for body, count in bodies.items():
        if count > 1:
            errors.append(f"body used by {count} records: {body[:60]!r}...")
    if len(by_id) < MIN_RECORDS:
        errors.append(f"corpus has {len(by_id)} records; at least {MIN_RECORDS} required")
    return by_id


def check_queries(queries: list[dict], by_id: dict[str, dict], errors: list[str]) -> Counter:
    counts: Counter = Counter()
    seen: dict[str, int] = {}
    texts = {rid: record_text(rec) for rid, rec in by_id.items()}
    lowers = {rid: t.lower() for rid, t in texts.items()}
    later_hits: dict[str, int] = defaultdict(int)
    for q in queries:
        where = f"queries line {q['_line']}"
        missing = [f for f in ("target", "type", "query") if f not in q]
        if missing:
            errors.append(f"{where}: missing fields {missing}")
            continue
        target, qtype, text = q["target"], q["type"], q["query"]
        where = f"{where} ({qtype} -> {target}: {text!r})"
        if target not in by_id:
            errors.append(f"{where}: target does not exist")
            continue
        if qtype not in QUERY_TYPES:
            errors.append(f"{where}: unknown type")
            continue
        if not isinstance(text, str) or not text.strip() or "\n" in text:
            errors.append(f"{where}: query must be a non-empty single line")
            continue
        norm = " ".join(text.lower().split())
        if norm in seen:
            errors.append(f"{where}: duplicate of queries line {seen[norm]}")
        seen[norm] = q["_line"]
        counts[qtype] += 1
        rec = by_id[target]
        others = [rid for rid in by_id if rid != target]

        if qtype == "keyword":
            words = text.lower().split()
            if not 2 <= len(words) <= 4:
                errors.append(f"{where}: keyword queries have 2-4 words")
            absent = [w for w in words if not contains_word(lowers[target], w)]
            if absent:
                errors.append(f"{where}: words not in target: {absent}")
            clash = [rid for rid in others if all(contains_word(lowers[rid], w) for w in words)]
            if clash:
                errors.append(f"{where}: all keywords also appear in {clash}")
            if rec["id"] and is_long(rec) and not any(contains_word(head_text(rec), w) for w in words):
                later_hits[target] += 1

        elif qtype == "identifier":
            if len(text.split()) > 2:
                errors.append(f"{where}: identifier queries are the identifier plus at most one word")
            tok = identifier_token(text)
            if tok is None:
                errors.append(f"{where}: no identifier token found")
                continue
            if not contains_verbatim(texts[target], tok):
                errors.append(f"{where}: identifier {tok!r} not verbatim in target")
            clash = [rid for rid in others if tok.lower() in lowers[rid]]
            if clash:
                errors.append(f"{where}: identifier {tok!r} also appears in {clash}")
            if is_long(rec) and tok.lower() not in head_text(rec):
                later_hits[target] += 1

        elif qtype == "question":
            if not text.rstrip().endswith("?") or len(text.split()) < 4:
                errors.append(f"{where}: a question ends with '?' and has at least four words")

        elif qtype == "paraphrase":
            if len(text.split()) < 3:
                errors.append(f"{where}: paraphrase too short")
            shared = shared_content_words(text, texts[target])
            if len(shared) > 1:
                errors.append(f"{where}: shares {len(shared)} content words with target: {shared}")

    for type_ in QUERY_TYPES:
        if counts[type_] < MIN_PER_TYPE:
            errors.append(f"only {counts[type_]} {type_} queries; at least {MIN_PER_TYPE} required")
    for rid, rec in by_id.items():
        if is_long(rec) and later_hits[rid] == 0:
            errors.append(
                f"record {rid}: long record without a keyword/identifier query answered only in a later section"
            )
    return counts


def is_long(rec: dict) -> bool:
    return isinstance(rec.get("body"), str) and len(rec["body"]) >= 1500


def head_text(rec: dict) -> str:
    """Title, tags and the first section of a long body, lowercased."""
    parts = sections(rec["body"])
    first = parts[0] + (parts[1] if len(parts) > 1 else "")
    return (rec["title"] + "\n" + " ".join(rec["tags"]) + "\n" + first).lower()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=HERE / "eval_corpus.jsonl")
    parser.add_argument("--queries", type=Path, default=HERE / "eval_queries.jsonl")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list per-record query coverage")
    args = parser.parse_args()

    errors: list[str] = []
    records = load_jsonl(args.corpus, errors)
    queries = load_jsonl(args.queries, errors)
    by_id = check_corpus(records, errors)
    counts = check_queries(queries, by_id, errors)

    long_bodies = sum(1 for r in by_id.values() if is_long(r))
    if long_bodies < MIN_LONG_BODIES:
        errors.append(f"only {long_bodies} long sectioned bodies; at least {MIN_LONG_BODIES} required")
    targeted = {q["target"] for q in queries if q.get("target") in by_id}

    print(f"corpus:  {args.corpus}")
    print(f"queries: {args.queries}")
    print(f"records: {len(by_id)} (long sectioned bodies: {long_bodies})")
    print("  kinds:  " + ", ".join(f"{k}={v}" for k, v in sorted(Counter(r["kind"] for r in by_id.values()).items())))
    print("  spaces: " + ", ".join(f"{k}={v}" for k, v in sorted(Counter(r["space"] for r in by_id.values()).items())))
    print(f"queries: {sum(counts.values())} -> " + ", ".join(f"{t}={counts[t]}" for t in QUERY_TYPES))
    print(f"records targeted by at least one query: {len(targeted)}/{len(by_id)}")
    if args.verbose:
        per = Counter(q["target"] for q in queries if q.get("target") in by_id)
        untargeted = sorted(set(by_id) - targeted)
        print(f"  max queries on one record: {max(per.values()) if per else 0}; untargeted: {untargeted}")
    if errors:
        print(f"\nFAILED: {len(errors)} problem(s)")
        for err in errors:
            print(f"  - {err}")
        return 1
    print("\nOK: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
