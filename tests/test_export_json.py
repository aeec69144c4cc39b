"""export_json / import_json: a lossless round trip into an empty instance,
space filtering that never leaks personal memory, and bad files refused
with nothing written."""

from __future__ import annotations

import copy
import io
import json
import os

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from retrieval import index
from reviews import actions, setup_code
from reviews.checksum import checksum_of
from reviews.errors import InvalidTransition
from reviews.models import Agent, AuditEvent, Proposal, Record

from .conftest import content
from .legacy_documents import as_old_version, with_todays_names
from .scratch_copies import fresh_database


@pytest.fixture(autouse=True)
def _no_reviewer_from_environment(monkeypatch):
    monkeypatch.delenv("VETTED_REVIEWER", raising=False)


def body(text: str) -> str:
    return f"{text} This is written down so that every agent on the team reads the same answer."


# --------------------------------------------------------------------------- an independent view of the state


def _fk_maps():
    users = {u.pk: u.get_username() for u in get_user_model().objects.all()}
    records = dict(Record.objects.values_list("pk", "public_id"))
    agents = dict(Agent.objects.values_list("pk", "public_id"))
    return users, records, agents


def _row(obj, maps, skip=()) -> dict:
    users, records, agents = maps
    out = {}
    for f in obj._meta.concrete_fields:
        if f.name in ("id",) + tuple(skip):
            continue
        value = getattr(obj, f.attname)
        if f.is_relation and value is not None:
            model = f.related_model
            value = {Record: records, Agent: agents}.get(model, users)[value]
        out[f.name] = value
    return out


def dump_state() -> dict:
    """Every row, with foreign keys as public ids / usernames (not via portability)."""
    maps = _fk_maps()
    return {
        "records": {r.public_id: _row(r, maps) for r in Record.objects.all()},
        "proposals": {p.public_id: _row(p, maps) for p in Proposal.objects.all()},
        "agents": {a.public_id: _row(a, maps, skip=("token_digest", "token_prefix")) for a in Agent.objects.all()},
        "audit": [
            {f.name: getattr(e, f.attname) for f in AuditEvent._meta.concrete_fields}
            for e in AuditEvent.objects.order_by("id")
        ],
    }


def seed(reviewer, second_reviewer, agent, team_agent, make_record) -> dict:
    """A bit of everything: a supersession chain (one step with reviewer edits),
    retired, disputed, overdue, edited out of band, moved, personal, and
    proposals in every state."""
    first = make_record(title="Billing API repository", body=body("Billing lives in acme/billing-api."))
    p = actions.propose_revision(
        first, agent=agent, reason="The repository was renamed", body=body("Billing lives in acme/billing-v2.")
    )
    second = actions.accept_proposal(p, actor=reviewer).result_record
    p = actions.propose_revision(
        second, agent=agent, reason="Renamed once more", body=body("Billing lives in acme/billing-v3.")
    )
    third = actions.accept_proposal_with_revision(
        p, actor=second_reviewer, changes={"tags": ["billing", "v3"]}, note="Tagged it"
    ).result_record

    retired = make_record(title="Old deploy window", body=body("Deploys happen on Fridays at noon."))
    actions.retire_record(retired, actor=reviewer, note="We no longer deploy on Fridays")
    disputed = make_record(title="On-call rotation", body=body("On-call rotates every Monday morning."))
    actions.dispute_record(disputed, agent=team_agent, reason="It rotates on Tuesdays now")
    overdue = make_record(title="Release checklist", body=body("Run the smoke tests before each release."))
    edited = make_record(title="Staging database host", body=body("Staging runs on db-staging-1."))
    personal = make_record(space="personal", title="Dentist on Thursdays", body=body("My dentist is on Thursdays."))
    moved = make_record(space="personal", title="Pager app choice", body=body("The pager app is Opsgenie."))
    moved_to = actions.move_record(moved, actor=reviewer, space="team", note="Everyone uses it now")

    pending = actions.propose_create(
        agent=agent,
        reason="Seen in chat today",
        **content(title="Coffee machine floor", body=body("The coffee is on floor 3.")),
    )
    rejected = actions.propose_create(
        agent=team_agent,
        reason="Seen in chat today",
        **content(title="Lunch is at noon", body=body("Lunch starts at noon.")),
    )
    actions.reject_proposal(rejected, actor=second_reviewer, note="Not worth remembering")
    withdrawn = actions.propose_create(
        agent=agent, reason="Seen in chat today", **content(title="Parking rules", body=body("Park on level two only."))
    )
    actions.withdraw_proposal(withdrawn, agent=agent, note="Wrong building")
    pending_retire = actions.propose_retirement(overdue, agent=agent, reason="The checklist moved to the wiki")
    old_bot, _ = actions.create_agent("old-bot", spaces=["team"], actor=reviewer)
    actions.revoke_agent(old_bot, actor=reviewer)

    with connection.cursor() as cursor:
        cursor.execute("UPDATE reviews_record SET review_by = '2020-01-01' WHERE public_id = %s", [overdue.public_id])
        cursor.execute(
            "UPDATE reviews_record SET body = body || ' (edited by hand)' WHERE public_id = %s", [edited.public_id]
        )
    Record.objects.filter(pk=first.pk).update(access_count=7, confidence=0.25, metadata={"source": "wiki", "n": 1})
    return {
        "chain": [first, second, third],
        "retired": retired,
        "disputed": disputed,
        "overdue": overdue,
        "edited": edited,
        "personal": personal,
        "moved": moved,
        "moved_to": moved_to,
        "pending": pending,
        "rejected": rejected,
        "withdrawn": withdrawn,
        "pending_retire": pending_retire,
    }


def export(path, *args):
    out, err = io.StringIO(), io.StringIO()
    call_command("export_json", str(path), *args, stdout=out, stderr=err)
    return json.loads(out.getvalue().strip().splitlines()[-1]), err.getvalue()


def import_file(path, *args):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_json", str(path), *args, stdout=out, stderr=err)
    return json.loads(out.getvalue().strip().splitlines()[-1]), err.getvalue()


# --------------------------------------------------------------------------- round trip


@pytest.mark.django_db(transaction=True)
def test_round_trip_into_an_empty_database_is_exact(
    tmp_path, reviewer, second_reviewer, agent, team_agent, make_record
):
    seeded = seed(reviewer, second_reviewer, agent, team_agent, make_record)
    before = dump_state()
    assert Record.objects.get(pk=seeded["edited"].pk).edited_since_approval
    summary, stderr = export(tmp_path / "all.json")
    assert summary["records"] == len(before["records"]) and summary["audit"] == len(before["audit"])
    assert "agents need new tokens" in stderr
    document = json.loads((tmp_path / "all.json").read_text())
    assert all(a["token_digest"] is None for a in document["agents"])

    with fresh_database():
        get_user_model().objects.create_superuser("rita", "rita@example.com", "another-password-9")
        # Spaces (issue 16): the first superuser's claim of the new instance's spaces is its only history.
        here = set(AuditEvent.objects.values_list("id", flat=True))
        result, stderr = import_file(tmp_path / "all.json")
        after = dump_state()
        sam = get_user_model().objects.get(username="sam")
        fts_hits = _fts_count("billing")
        report = index.check()
        imported_event = AuditEvent.objects.get(event_type="snapshot.imported")
        tokenless = list(Agent.objects.filter(token_digest__isnull=True).values_list("name", flat=True))

    assert result["records"] == len(before["records"])
    assert result["users_created_inactive"] == ["sam"]
    assert not sam.is_active and not sam.has_usable_password()
    # Imported ids shift only when they collide with the new instance's own
    # events (the ids the source had depend on the tests that ran before).
    original = {row["id"] for row in document["audit"]}
    assert result["audit_id_offset"] == (max(here) - min(original) + 1 if here & original else 0)
    assert result["edited_since_approval"] == [seeded["edited"].public_id]
    assert "--rotate" in stderr and "claude-code" in stderr

    assert after["records"] == before["records"]  # every field, timestamps, links, checksums, statuses
    # ... the approved content too, also of the record edited out of band (so it can still be restored):
    edited = after["records"][seeded["edited"].public_id]
    assert edited["approved_content"] == {
        **content(title="Staging database host", body=body("Staging runs on db-staging-1.")),
        "tags": ["billing", "repos"],
    }
    assert document["version"] == 3
    assert after["proposals"] == before["proposals"]
    assert after["agents"] == before["agents"]
    imported = [r for r in after["audit"] if r["id"] not in here]
    offset = result["audit_id_offset"]
    # verbatim, original times, ids shifted by the one recorded offset; then, as
    # new changes, sam rejoining the team and system spaces the new instance had
    merged = [(r["event_type"], r["subject_id"], r["extra"]) for r in imported[-3:-1]]
    assert merged == [
        ("space.member_added", slug, {"member": "sam", "role": "reviewer", "import": True})
        for slug in ("system", "team")
    ]
    assert [{**r, "id": r["id"] - offset} for r in imported[:-3]] == before["audit"]
    assert after["audit"][-1]["event_type"] == "snapshot.imported"
    assert imported_event.actor == "rita" and imported_event.extra["records"] == len(before["records"])
    assert sorted(tokenless) == sorted(["claude-code", "team-bot", "old-bot"])

    chain = [c.public_id for c in seeded["chain"]]
    assert after["records"][chain[0]]["superseded_by"] == chain[1]
    assert after["records"][chain[2]]["supersedes"] == chain[1]
    assert [after["records"][c]["status"] for c in chain] == ["superseded", "superseded", "approved"]
    assert fts_hits >= 1
    assert report.ok, report.problems


def _fts_count(word: str) -> int:
    from retrieval import tables
    from retrieval.engines import retrieval_engine

    with connection.cursor() as cursor:  # the keyword index of either engine
        return sum(
            retrieval_engine(cursor).document_frequency(cursor, space, state, word)
            for space, state in tables.PARTITIONS
        )


@pytest.mark.django_db(transaction=True)
def test_token_digests_only_with_the_flag_and_then_tokens_keep_working(tmp_path, reviewer, agent):
    _agent, token = actions.rotate_agent_token(agent, actor=reviewer)
    export(tmp_path / "with.json", "--include-token-digests")
    assert oct(os.stat(tmp_path / "with.json").st_mode & 0o777) == "0o600"
    with fresh_database():
        get_user_model().objects.create_superuser("rita", "rita@example.com", "another-password-9")
        result, _ = import_file(tmp_path / "with.json", "--no-sync")
        assert actions.agent_for_token(token).name == "claude-code"
    assert result["agents_without_token"] == []


@pytest.mark.django_db(transaction=True)
def test_imported_agents_without_digest_get_a_token_with_connect_rotate(tmp_path, reviewer, agent):
    export(tmp_path / "all.json")
    with fresh_database():
        get_user_model().objects.create_superuser("rita", "rita@example.com", "another-password-9")
        import_file(tmp_path / "all.json", "--no-sync")
        out = io.StringIO()
        call_command("connect", "cursor", "--agent", "claude-code", "--rotate", stdout=out, stderr=io.StringIO())
        token = json.loads(out.getvalue().split("\n\n")[0].split("\n", 1)[1])["mcpServers"]["vetted"]["env"][
            "VETTED_TOKEN"
        ]
        assert actions.agent_for_token(token).name == "claude-code"
        actions.import_agent()
        with pytest.raises(InvalidTransition, match="tokenless import agent"):
            actions.rotate_agent_token("import", actor=get_user_model().objects.get(username="rita"))


@pytest.mark.django_db(transaction=True)
def test_existing_audit_ids_shift_imported_ids_by_one_recorded_offset(tmp_path, reviewer, agent, make_record):
    make_record()
    before = dump_state()["audit"]
    export(tmp_path / "all.json")
    with fresh_database():
        actions.create_first_reviewer(
            username="rita", password="another-password-9", remote_addr="127.0.0.1", setup_code=setup_code.ensure()
        )
        # An event here already holds the first exported id (first run's own
        # events, e.g. claiming the spaces, may hold it already).
        AuditEvent.objects.filter(id=before[0]["id"]).exists() or AuditEvent.objects.create(
            id=before[0]["id"],
            event_type="test.marker",
            actor_type="system",
            actor="test",
            subject_type="user",
            subject_id="rita",
        )
        here = set(AuditEvent.objects.values_list("id", flat=True))
        result, stderr = import_file(tmp_path / "all.json", "--no-sync")
        rows = dump_state()["audit"]
    offset = result["audit_id_offset"]
    assert offset > 0 and "shifted" in stderr
    imported = [r for r in rows if r["id"] not in here and r["event_type"] != "snapshot.imported"]
    assert min(r["id"] for r in imported) > before[0]["id"]
    assert [r["id"] - offset for r in imported] == [r["id"] for r in before]
    assert [{**r, "id": None} for r in imported] == [{**r, "id": None} for r in before]


# --------------------------------------------------------------------------- spaces


@pytest.mark.django_db(transaction=True)
def test_team_export_contains_nothing_personal(tmp_path, reviewer, second_reviewer, agent, team_agent, make_record):
    seeded = seed(reviewer, second_reviewer, agent, team_agent, make_record)
    # Look-alikes in both spaces, and proposals and events about the personal ones.
    twin_team = make_record(title="Zebra roster team", body=body("The zebra roster is kept by the team lead."))
    twin_personal = make_record(
        space="personal",
        title="Zebra roster personal",
        body=body("My zebra roster secret is kept in a drawer at home."),
    )
    actions.dispute_record(twin_personal, agent=agent, reason="Zebra roster personal is outdated")
    pending_personal = actions.propose_create(
        agent=agent,
        reason="Zebra roster personal note",
        **content(
            space="personal", title="Zebra roster personal draft", body=body("My private zebra draft stays mine.")
        ),
    )
    # A team record with a pending retirement, moved to the personal space:
    # the retirement is closed with a note naming the personal successor.
    outgoing = make_record(title="Zebra roster draft rules", body=body("Draft zebra rules are in the team doc."))
    actions.propose_retirement(outgoing, agent=team_agent, reason="These draft rules are outdated")
    moved_out = actions.move_record(outgoing, actor=reviewer, space="personal", note="Only I need these")
    personal_titles = [
        "Zebra roster personal",
        "Zebra roster personal draft",
        "Dentist on Thursdays",
        "My zebra roster secret",
        "My private zebra draft",
        "drawer at home",
        "My dentist",
    ]
    personal_ids = [
        twin_personal.public_id,
        pending_personal.public_id,
        seeded["personal"].public_id,
        seeded["moved"].public_id,
        moved_out.public_id,
    ]
    personal_ids += list(Proposal.objects.filter(space="personal").values_list("public_id", flat=True))
    personal_ids += list(Proposal.objects.filter(target__space="personal").values_list("public_id", flat=True))

    summary, stderr = export(tmp_path / "team.json", "--space", "team")
    text = (tmp_path / "team.json").read_text()
    for needle in personal_titles + personal_ids:
        assert needle not in text, needle
    document = json.loads(text)
    assert {r["space"] for r in document["records"]} == {"team"}
    assert twin_team.public_id in text and "Zebra roster team" in text
    moved_to = next(r for r in document["records"] if r["public_id"] == seeded["moved_to"].public_id)
    assert moved_to["supersedes"] is None  # the link into the personal space is cut
    assert summary["cut_supersession_links"] == 2 and summary["audit_events_left_out"] > 0
    assert "mentioning other spaces left out" in stderr

    with fresh_database():
        get_user_model().objects.create_superuser("rita", "rita@example.com", "another-password-9")
        result, _ = import_file(tmp_path / "team.json", "--no-sync")
        assert not Record.objects.filter(space="personal").exists()
    assert result["records"] == len(document["records"])


# --------------------------------------------------------------------------- bad files


AGENT = "agt_aaaaaaaaaaaa"
REC1, REC2 = "rec_111111111111", "rec_222222222222"
PROP = "prop_333333333333"
T = "2026-01-02T03:04:05.123456+00:00"


def minimal_document() -> dict:
    def record(pid, status, supersedes=None, superseded_by=None, title="A fact worth keeping"):
        c = content(title=title)
        return {
            "public_id": pid,
            **c,
            "status": status,
            "review_by": "2027-01-01",
            "approved_checksum": checksum_of(c),
            "approved_at": T,
            "approved_by": "ghost",
            "verified_at": None,
            "valid_from": None,
            "valid_until": None,
            "supersedes": supersedes,
            "superseded_by": superseded_by,
            "proposed_by": AGENT,
            "source_tool": "t",
            "reason": "because",
            "session": "",
            "confidence": None,
            "access_count": 0,
            "metadata": {},
            "created_at": T,
            "updated_at": T,
            "approved_content": c,
        }

    return {
        "format": "vetted-export",
        "version": 3,
        "exported_at": T,
        "space_slugs": ["personal", "team", "system"],
        "records": [
            record(REC1, "superseded", superseded_by=REC2),
            record(REC2, "approved", supersedes=REC1, title="A fact worth keeping, revised"),
        ],
        "proposals": [
            {
                "public_id": PROP,
                "action": "revise",
                "target": REC1,
                "state": "accepted",
                **content(),
                "review_by": None,
                "valid_from": None,
                "valid_until": None,
                "confidence": None,
                "metadata": {},
                "content_checksum": "",
                "reason": "because",
                "agent": AGENT,
                "proposed_by_user": "",
                "source_tool": "",
                "session": "",
                "decided_by": "ghost",
                "decided_at": T,
                "decision_note": "",
                "reviewer_changes": {},
                "result_record": REC2,
                "created_at": T,
                "updated_at": T,
            }
        ],
        "agents": [
            {
                "public_id": AGENT,
                "name": "ghost-bot",
                "token_digest": None,
                "token_prefix": "",
                "spaces": ["team"],
                "source_tool": "",
                "is_active": True,
                "last_seen_at": None,
                "created_at": T,
                "created_by": "ghost",
                "revoked_at": None,
            }
        ],
        "audit": [
            {
                "id": 1,
                "event_type": "proposal.accepted",
                "at": T,
                "actor_type": "user",
                "actor": "ghost",
                "subject_type": "proposal",
                "subject_id": PROP,
                "record_ref": REC2,
                "proposal_ref": PROP,
                "checksum_before": "",
                "checksum_after": "",
                "snippet": "",
                "extra": {},
            }
        ],
    }


def _counts():
    return (
        Record.objects.count(),
        Proposal.objects.count(),
        Agent.objects.count(),
        AuditEvent.objects.count(),
        get_user_model().objects.count(),
    )


@pytest.mark.django_db
def test_the_minimal_document_imports(tmp_path, reviewer):
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(minimal_document()))
    result, _ = import_file(path, "--no-sync")
    assert result["records"] == 2 and result["users_created_inactive"] == ["ghost"]
    assert Record.objects.get(public_id=REC1).superseded_by.public_id == REC2


def _mutations():
    def drop(key):
        return lambda d: d.pop(key)

    def rec(i, **changes):
        return lambda d: d["records"][i].update(changes)

    def del_field(i, name):
        return lambda d: d["records"][i].pop(name)

    return [
        ("format", lambda d: d.update(format="something-else"), "format is 'something-else'"),
        ("version", lambda d: d.update(version=4), "version 4 is not supported"),
        ("version true", lambda d: d.update(version=True), "version True is not supported"),
        ("missing audit", drop("audit"), "missing top-level field(s): audit"),
        ("missing field", del_field(0, "approved_checksum"), "missing field(s) approved_checksum"),
        (
            "dangling supersedes",
            rec(1, supersedes="rec_999999999999"),
            "supersedes points to 'rec_999999999999', which is not in the file",
        ),
        ("one-sided chain", rec(0, superseded_by=None, status="approved"), "supersedes 'rec_111111111111', but"),
        ("status", rec(0, status="deleted"), "status 'deleted' is not one of"),
        ("bad date", rec(0, review_by="next week"), "review_by must be a date YYYY-MM-DD"),
        ("naive time", rec(0, approved_at="2026-01-02T03:04:05"), "approved_at must be an ISO 8601"),
        ("bad checksum", rec(0, approved_checksum="abc"), "approved_checksum must be 64 lowercase hex digits"),
        ("duplicate id", rec(1, public_id=REC1), "public_id appears twice"),
        (
            "dangling target",
            lambda d: d["proposals"][0].update(target="rec_999999999999"),
            "target points to 'rec_999999999999'",
        ),
        (
            "unknown agent",
            lambda d: d["proposals"][0].update(agent="agt_bbbbbbbbbbbb"),
            "agent 'agt_bbbbbbbbbbbb' is not an agent in the file",
        ),
        ("audit id", lambda d: d["audit"][0].update(id="one"), "id must be a whole number"),
        ("not an object", lambda d: d["records"].append(["x"]), "records[2]: must be a JSON object"),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("name,mutate,expected", _mutations(), ids=[m[0] for m in _mutations()])
def test_bad_documents_are_refused_naming_the_problem(tmp_path, reviewer, name, mutate, expected):
    document = copy.deepcopy(minimal_document())
    mutate(document)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    before = _counts()
    with pytest.raises(CommandError) as caught:
        import_file(path)
    assert expected in str(caught.value)
    assert "Nothing was written" in str(caught.value)
    assert _counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    "raw,expected",
    [
        (b"{not json", "is not valid JSON"),
        (b"\xff\xfe", "is not UTF-8"),
        (b"[1, 2]", "must hold one JSON object"),
    ],
)
def test_unreadable_files_are_refused(tmp_path, reviewer, raw, expected):
    path = tmp_path / "bad.json"
    path.write_bytes(raw)
    before = _counts()
    with pytest.raises(CommandError, match=expected):
        import_file(path)
    assert _counts() == before


@pytest.mark.django_db
def test_an_instance_with_records_is_refused(tmp_path, record):
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(minimal_document()))
    before = _counts()
    with pytest.raises(CommandError, match=r"already holds 1 record\(s\).*only loads into an empty instance"):
        import_file(path)
    assert _counts() == before


@pytest.mark.django_db
def test_a_conflict_found_while_writing_rolls_everything_back(tmp_path, reviewer, agent):
    document = minimal_document()
    document["agents"][0]["public_id"] = agent.public_id  # same id, another name
    for row in document["records"]:
        row["proposed_by"] = agent.public_id
    document["proposals"][0]["agent"] = agent.public_id
    path = tmp_path / "clash.json"
    path.write_text(json.dumps(document))
    before = _counts()
    with pytest.raises(CommandError, match="already has that id for agent 'claude-code'"):
        import_file(path)
    assert _counts() == before
    assert not get_user_model().objects.filter(username="ghost").exists()


@pytest.mark.django_db
def test_export_refuses_to_overwrite(tmp_path, record):
    path = tmp_path / "x.json"
    path.write_text("keep me")
    with pytest.raises(CommandError, match="already exists"):
        export(path)
    assert path.read_text() == "keep me"


# --------------------------------------------------------------------------- approved content (version 2)


def _v2_document() -> dict:
    return as_old_version(minimal_document(), 2)


@pytest.mark.django_db
def test_a_version_1_file_imports_with_the_approved_content_derived_like_the_migration(tmp_path, reviewer):
    document = as_old_version(minimal_document(), 1)
    document["records"][0]["body"] += " Edited by hand before the export."  # REC1 no longer matches
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(document))
    result, _ = import_file(path, "--no-sync")
    assert result["edited_since_approval"] == [REC1]
    assert Record.objects.get(public_id=REC1).approved_content is None  # lost: nothing to restore
    kept = Record.objects.get(public_id=REC2)
    assert kept.approved_text() == {
        "kind": kept.kind,
        "space": kept.space,
        "title": kept.title,
        "body": kept.body,
        "tags": kept.tags,
    }


@pytest.mark.django_db
def test_a_version_2_file_keeps_the_approved_content_of_an_edited_record(tmp_path, reviewer):
    document = _v2_document()
    approved = with_todays_names(document["records"][1]["approved_content"])
    document["records"][1]["body"] += " Edited by hand before the export."
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(document))
    import_file(path, "--no-sync")
    record = Record.objects.get(public_id=REC2)
    assert record.edited_since_approval and record.approved_text() == approved
    actions.restore_approved_text(record, actor=reviewer)
    assert not Record.objects.get(public_id=REC2).edited_since_approval


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name,mutate",
    [
        ("other text", lambda c: c.update(body=c["body"] + " Something nobody approved.")),
        ("missing field", lambda c: c.pop("tags")),
        ("extra field", lambda c: c.update(review_by="2027-01-01")),
        ("wrong type", lambda c: c.update(tags="billing")),
    ],
)
def test_a_version_2_file_with_approved_content_that_is_not_what_was_approved_is_refused(
    tmp_path, reviewer, name, mutate
):
    document = _v2_document()
    mutate(document["records"][0]["approved_content"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    before = _counts()
    with pytest.raises(CommandError, match="approved_content must be null or an object with exactly"):
        import_file(path)
    assert _counts() == before


@pytest.mark.django_db
def test_a_version_2_file_without_the_approved_content_field_is_refused(tmp_path, reviewer):
    document = _v2_document()
    del document["records"][0]["approved_content"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CommandError, match=r"missing field\(s\) approved_content"):
        import_file(path)
