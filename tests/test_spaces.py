"""Spaces: a personal record never appears in anything produced for the team
space. Both spaces are seeded with look-alike records (same topics, same
tags, contradicting details), plus personal history (a superseded version,
a dispute, a retirement, pending proposals), and every team output is
grepped for the personal markers."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from mcp_bridge import agent_api
from retrieval import quality
from retrieval.embeddings import FakeEmbedder
from reviews import actions
from reviews.errors import NotFound, SpaceNotAllowed
from tests.shared_data import for_a_test, fresh, make_people, make_reviewer, shared

pytestmark = pytest.mark.django_db

# Every personal record carries one of these; none may leak.
PERSONAL_MARKERS = ("Zanzibar", "kumquat", "pers-only")


def _two_spaces(reviewer, agent, team_agent, make_record):
    team = [
        make_record(
            space="team",
            title="Deploy window for billing",
            tags=["deploy", "billing"],
            body="The billing API deploys every Tuesday at 10:00 UTC after the standup.",
        ),
        make_record(
            space="team",
            title="Code review rule",
            tags=["review"],
            body="Every pull request needs one approving review before merging into main.",
        ),
    ]
    personal = [
        make_record(
            space="personal",
            title="Deploy window for billing (Zanzibar trip)",
            tags=["deploy", "billing", "pers-only"],
            body="I deploy the billing API every Thursday at 16:00 UTC, never while in Zanzibar.",
        ),
        make_record(
            space="personal",
            title="Code review rule for kumquat",
            tags=["review", "pers-only"],
            body="My kumquat side project merges without any review, straight into main.",
        ),
        make_record(
            space="personal",
            title="Old kumquat note",
            tags=["pers-only"],
            body="The kumquat project used to live on a Raspberry Pi under the desk.",
        ),
    ]
    actions.revise_record(
        personal[2], actor=reviewer, changes={"body": "The kumquat project moved to a VPS in Zanzibar."}
    )
    actions.dispute_record(personal[1], agent=agent, reason="kumquat merges now need a review too.")
    actions.propose_create(
        agent=agent,
        reason="Zanzibar trip notes from today.",
        kind="event",
        space="personal",
        title="Zanzibar flight",
        body="The kumquat conference flight to Zanzibar leaves on Friday morning.",
        tags=["pers-only"],
    )
    return team, personal


@pytest.fixture(scope="class")
def two_spaces_world(django_db_setup, django_db_blocker):
    """The people and ``_two_spaces``'s records, made once for the class that uses them."""

    def build():
        people = make_people()
        return people, _two_spaces(people.reviewer, people.agent, people.team_agent, people.make_record)

    yield from shared(build, django_db_blocker)


def assert_clean(text: str, where: str) -> None:
    for marker in PERSONAL_MARKERS:
        assert marker.lower() not in text.lower(), f"{marker!r} leaked into {where}"


class TestTwoSpaces:
    """The tests over ``_two_spaces``'s records, made once for the class
    (tests/shared_data.py); each test gets its own copies of them and of the people."""

    @pytest.fixture
    def reviewer(self, two_spaces_world, db):
        return fresh(two_spaces_world[0].reviewer)

    @pytest.fixture
    def agent(self, two_spaces_world, db):
        return fresh(two_spaces_world[0].agent)

    @pytest.fixture
    def team_agent(self, two_spaces_world, db):
        return fresh(two_spaces_world[0].team_agent)

    @pytest.fixture
    def two_spaces(self, two_spaces_world, db):
        return for_a_test(two_spaces_world[1])

    def test_team_search_describe_list_and_quality_show_no_personal_content(self, two_spaces, team_agent):
        for query in ("deploy billing Thursday", "kumquat review", "Zanzibar", "code review main"):
            for mode in ("keyword", "semantic", "hybrid"):
                answer = agent_api.search(team_agent, query, mode=mode)
                answer.pop("query")  # the query itself is echoed back
                assert_clean(json.dumps(answer), f"team search {query!r} ({mode})")
                assert not answer["withheld"], "personal records must not even be counted as withheld"
        assert_clean(json.dumps(agent_api.describe(team_agent)), "team describe")
        assert_clean(json.dumps(agent_api.list_records(team_agent, limit=100)), "team list")
        assert_clean(json.dumps(quality.run(["team"], embedder=FakeEmbedder()).as_dict()), "team quality report")
        out = io.StringIO()
        call_command("quality", "--space", "team", "--json", stdout=out)
        assert_clean(out.getvalue(), "quality --space team")

    def test_team_describe_counts_only_team_records(self, two_spaces, team_agent):
        described = agent_api.describe(team_agent)
        assert [s["slug"] for s in described["spaces"]] == ["team"]
        assert described["records_current"] == 2
        assert described["pending_proposals"] == {"yours": 0}
        assert "pers-only" not in {t["name"] for t in described["tags"]}

    def test_team_markdown_export_has_no_personal_content(self, two_spaces, tmp_path):
        call_command(
            "export_markdown",
            str(tmp_path),
            "--space",
            "team",
            "--include-history",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert len([p for p in files if p.suffix == ".md"]) == 2
        for path in files:
            assert_clean(path.read_text(encoding="utf-8"), f"team Markdown export {path.name}")

    def test_team_json_export_has_no_personal_content(self, two_spaces, tmp_path):
        target = tmp_path / "team.json"
        call_command("export_json", str(target), "--space", "team", stdout=io.StringIO(), stderr=io.StringIO())
        text = target.read_text(encoding="utf-8")
        assert_clean(text, "team JSON export")
        data = json.loads(text)
        assert {r["space"] for r in data["records"]} == {"team"}

    def test_personal_content_is_there_for_a_personal_reader(self, two_spaces, agent):
        # The markers are real: the same outputs for the personal space do contain them.
        answer = agent_api.search(agent, "kumquat", mode="keyword")
        assert "kumquat" in json.dumps(answer).lower()

    def test_moving_a_record_is_the_only_way_into_the_team_space(self, two_spaces, reviewer, team_agent):
        _team, personal = two_spaces
        assert "Zanzibar" not in json.dumps(agent_api.search(team_agent, "deploy billing Thursday", mode="keyword"))
        moved = actions.move_record(personal[0], actor=reviewer, space="team", note="Now the team's rule too.")
        found = agent_api.search(team_agent, "deploy billing Thursday", mode="keyword")
        assert moved.public_id in [hit["id"] for hit in found["results"]]
        read = agent_api.read(team_agent, moved.public_id)
        assert read["record"]["supersedes"] is None  # the personal predecessor's id does not cross either

    def test_describe_counts_only_what_search_can_deliver(self, two_spaces, team_agent):
        from django.db import connection

        team, _personal = two_spaces
        before = agent_api.describe(team_agent)
        with connection.cursor() as cursor:  # edited outside Vetted: search withholds it, describe must not count it
            cursor.execute("UPDATE reviews_record SET body = body || ' (tampered)' WHERE id = %s", [team[0].pk])
        after = agent_api.describe(team_agent)
        assert after["records_current"] == before["records_current"] - 1
        assert {t["name"] for t in after["tags"]} == {t["name"] for t in before["tags"]} - {"deploy", "billing"}


# --------------------------------------------------------------------------- two people, two team spaces (issue 16)
#
# rita works for two clients, acme and northrail; sam is in northrail too
# and has a personal space of his own. Each space holds look-alike records
# (the same topics and tags, different details); each marker below appears
# only in its own space. An agent granted acme must find nothing of the
# others on any surface.

MARKERS = {
    "acme": ("quokka", "acme-only"),
    "northrail": ("wombat", "north-only"),
    "personal:sam": ("samsecret", "sam-only"),
}


def build_clients() -> dict:
    """rita (as the conftest's ``reviewer``) and sam, their three spaces, an
    agent, two approved records and a pending proposal in each space."""
    from django.contrib.auth import get_user_model

    reviewer = make_reviewer()
    sam = get_user_model().objects.create_user("sam", password="a-long-password-2", is_staff=True)
    actions.create_space("acme", kind="team", name="Acme Corp", actor=reviewer)
    actions.create_space("northrail", kind="team", name="Northrail", actor=reviewer)
    actions.add_member("northrail", sam, role="reviewer", actor=reviewer)
    actions.create_space("", kind="personal", name="Sam's memory", actor=sam)
    bots = {
        "acme": actions.create_agent("acme-bot", spaces=["acme"], actor=reviewer)[0],
        "northrail": actions.create_agent("north-bot", spaces=["northrail"], actor=sam)[0],
        "personal:sam": actions.create_agent("sam-bot", spaces=["personal:sam"], actor=sam)[0],
    }
    deciders = {"acme": reviewer, "northrail": sam, "personal:sam": sam}
    days = {"acme": "Tuesday at 10:00", "northrail": "Thursday at 16:00", "personal:sam": "Friday at 08:00"}
    records: dict[str, list] = {}
    for slug, (word, tag) in MARKERS.items():
        made = []
        for title, body, tags in (
            (
                f"Deploy window for billing ({word})",
                f"The billing API deploys every {days[slug]} UTC after the {word} standup.",
                ["deploy", "billing", tag],
            ),
            (
                f"Code review rule for {word}",
                f"Every pull request in the {word} repositories needs one approving review before merging.",
                ["review", tag],
            ),
        ):
            proposal = actions.propose_create(
                agent=bots[slug],
                reason="From the client handbook.",
                kind="fact",
                space=slug,
                title=title,
                body=body,
                tags=tags,
            )
            made.append(actions.accept_proposal(proposal, actor=deciders[slug]).result_record)
        records[slug] = made
    # A pending proposal in each space too (titles and counts must not cross either).
    pending = {
        slug: actions.propose_create(
            agent=bots[slug],
            reason="Heard in a call today.",
            kind="event",
            space=slug,
            title=f"Release freeze ({MARKERS[slug][0]})",
            body=f"The {MARKERS[slug][0]} release freeze starts next Monday for two weeks.",
            tags=[MARKERS[slug][1]],
        )
        for slug in MARKERS
    }
    return {"bots": bots, "records": records, "pending": pending, "sam": sam, "rita": reviewer}


@pytest.fixture(scope="class")
def clients_world(django_db_setup, django_db_blocker):
    """``build_clients()``, made once for the class that uses it (test_space_people.py
    and test_space_surfaces.py make it once for their module)."""
    yield from shared(build_clients, django_db_blocker)


@pytest.fixture
def clients(clients_world, db):
    """This test's own copies of the shared ``build_clients()``."""
    return for_a_test(clients_world)


def assert_only(text: str, slug: str, where: str) -> None:
    for other, words in MARKERS.items():
        if other == slug:
            continue
        for word in words:
            assert word not in text.lower(), f"{word!r} of {other} leaked into {where}"


class TestTwoClients:
    """The tests over ``clients``: ``build_clients()`` runs once for the class."""

    @pytest.mark.parametrize("slug", list(MARKERS))
    def test_an_agent_finds_only_its_granted_space_in_every_search_mode(self, clients, slug):
        bot = clients["bots"][slug]
        for query in ("deploy billing window", "code review rule", "quokka wombat samsecret", "Thursday 16:00"):
            for mode in ("keyword", "semantic", "hybrid"):
                answer = agent_api.search(bot, query, mode=mode)
                answer.pop("query")
                assert_only(json.dumps(answer), slug, f"{slug} search {query!r} ({mode})")
                assert not answer["withheld"], "other spaces' records are not even counted as withheld"
        own = agent_api.search(bot, "deploy billing window", mode="keyword")
        assert {hit["id"] for hit in own["results"]} >= {clients["records"][slug][0].public_id}

    @pytest.mark.parametrize("slug", list(MARKERS))
    def test_describe_list_and_quality_show_only_the_granted_space(self, clients, slug):
        bot = clients["bots"][slug]
        described = agent_api.describe(bot)
        assert_only(json.dumps(described), slug, f"{slug} describe")
        assert described["records_current"] == 2
        assert [s["slug"] for s in described["spaces"]] == [slug]
        assert described["spaces"][0]["name"] == {"acme": "Acme Corp", "northrail": "Northrail"}.get(
            slug, "Sam's memory"
        )
        assert_only(json.dumps(agent_api.list_records(bot, limit=100)), slug, f"{slug} list")
        assert_only(json.dumps(agent_api.quality_check(bot)), slug, f"{slug} quality_check")

    def test_another_spaces_record_and_proposal_are_unknown_ids(self, clients):
        acme = clients["bots"]["acme"]
        theirs = clients["records"]["northrail"][0]
        with pytest.raises(NotFound) as known:
            agent_api.read(acme, theirs.public_id)
        with pytest.raises(NotFound) as unknown:
            agent_api.read(acme, "rec_000000000000")
        assert known.value.message.replace(theirs.public_id, "ID") == unknown.value.message.replace(
            "rec_000000000000", "ID"
        )
        with pytest.raises(NotFound):
            agent_api.proposal_status(acme, clients["pending"]["northrail"].public_id)
        with pytest.raises(NotFound):
            agent_api.dispute(acme, record_id=theirs.public_id, reason="This is wrong, it moved.")

    def test_a_copy_of_another_spaces_text_is_not_refused_as_a_duplicate(self, clients):
        """Refusing it (or answering similar_exists) would tell acme-bot the text exists elsewhere."""
        theirs = clients["records"]["northrail"][0]
        answer = agent_api.propose_context(
            clients["bots"]["acme"],
            title=theirs.title,
            body=theirs.body,
            kind="fact",
            space="acme",
            tags=["deploy"],
            reason="Copied from a chat with the client.",
        )
        assert answer["status"] == "pending" and theirs.public_id not in json.dumps(answer)

    def test_an_agent_cannot_write_into_a_space_it_is_not_granted(self, clients):
        with pytest.raises(SpaceNotAllowed):
            actions.propose_create(
                agent=clients["bots"]["acme"],
                reason="From the client handbook.",
                kind="fact",
                space="northrail",
                title="Northrail note",
                body="Northrail deploys on Thursdays at 16:00 UTC after the standup.",
                tags=[],
            )

    @pytest.mark.parametrize("slug", ["acme", "northrail"])
    def test_a_json_and_markdown_export_of_one_space_hold_nothing_of_another(self, clients, slug, tmp_path):
        target = tmp_path / f"{slug}.json"
        call_command("export_json", str(target), "--space", slug, stdout=io.StringIO(), stderr=io.StringIO())
        text = target.read_text(encoding="utf-8")
        assert_only(text, slug, f"export_json --space {slug}")
        other = "northrail" if slug == "acme" else "acme"
        assert other not in text.lower(), f"the other client's space is named in export_json --space {slug}"
        assert {r["space"] for r in json.loads(text)["records"]} == {slug}
        folder = tmp_path / "md"
        call_command(
            "export_markdown",
            str(folder),
            "--space",
            slug,
            "--include-history",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert len([p for p in files if p.suffix == ".md"]) == 2
        for path in files:
            assert_only(path.read_text(encoding="utf-8"), slug, f"export_markdown --space {slug} {path.name}")

    def test_a_person_decides_only_in_their_spaces(self, clients):
        sam = clients["sam"]
        with pytest.raises(NotFound):
            actions.accept_proposal(clients["pending"]["acme"], actor=sam)
        assert actions.accept_proposal(clients["pending"]["northrail"], actor=sam).state == "accepted"
        rita = clients["rita"]
        with pytest.raises(NotFound):
            actions.accept_proposal(clients["pending"]["personal:sam"], actor=rita)

    # --------------------------------------------------------------------------- the reviewer site, per person

    def test_a_persons_pages_show_only_their_spaces(self, clients, client):
        """sam reviews northrail and owns personal:sam; acme (rita's client) and
        rita's personal space do not exist on his pages."""
        client.force_login(clients["sam"])
        pages = {
            "inbox": client.get("/"),
            "records": client.get("/records/"),
            "due": client.get("/due/"),
            "disputed": client.get("/disputed/"),
        }
        for name, response in pages.items():
            assert response.status_code == 200, name
            text = response.content.decode().lower()
            for word in MARKERS["acme"]:
                assert word not in text, f"acme's {word!r} on sam's {name} page"
        inbox = pages["inbox"].content.decode().lower()
        assert "wombat" in inbox and "samsecret" in inbox  # his own spaces are there

    def test_another_spaces_ids_are_the_same_404_as_unknown_ones_on_the_site(self, clients, client):
        client.force_login(clients["sam"])
        acme_record = clients["records"]["acme"][0].public_id
        acme_proposal = clients["pending"]["acme"].public_id
        for known, unknown in (
            (f"/records/{acme_record}/", "/records/rec_000000000000/"),
            (f"/proposals/{acme_proposal}/", "/proposals/prop_000000000000/"),
        ):
            theirs, nobody = client.get(known), client.get(unknown)
            assert (theirs.status_code, theirs.get("Location")) == (nobody.status_code, nobody.get("Location")), known
            assert theirs.status_code in (302, 404)
            htmx = {"HTTP_HX_REQUEST": "true"}
            theirs, nobody = client.get(known, **htmx), client.get(unknown, **htmx)
            assert theirs.status_code == nobody.status_code
            assert theirs.content.replace(known.split("/")[2].encode(), b"ID") == nobody.content.replace(
                unknown.split("/")[2].encode(), b"ID"
            )
        accepted = client.post(f"/proposals/{acme_proposal}/accept", {"note": ""})
        assert (
            accepted.status_code in (302, 404)
            and clients["pending"]["acme"].__class__.objects.get(public_id=acme_proposal).state == "pending"
        )

    def test_the_inbox_space_filter_takes_slugs_of_the_viewers_spaces(self, clients, client):
        client.force_login(clients["rita"])
        shown = client.get("/?space=acme").content.decode().lower()
        assert "quokka" in shown and "wombat" not in shown
        refused = client.get("/?space=personal:sam").content.decode()
        assert "is not one of" in refused and "samsecret" not in refused.lower()

    def test_rest_takes_space(self, clients):
        from rest_framework.test import APIClient

        _agent, token = actions.create_agent("acme-rest", spaces=["acme"], actor=clients["rita"])
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        by_space = api.get("/api/v1/search", {"q": "deploy billing", "mode": "keyword", "space": "acme"}).json()
        assert by_space["results"] and "deprecated" not in by_space
        listed = api.get("/api/v1/records", {"space": "acme"}).json()
        assert listed["count"] == 2
        refused = api.get("/api/v1/search", {"q": "deploy", "space": "northrail"})
        assert (
            refused.status_code == 400 and "northrail" in refused.content.decode()
        )  # its own input echoed, nothing else
        made = api.post(
            "/api/v1/proposals",
            {
                "title": "Acme on-call rota",
                "body": "Acme's on-call rota changes every Monday at 09:00 in the ops channel.",
                "kind": "fact",
                "space": "acme",
                "reason": "Told in the Monday call.",
            },
            format="json",
        )
        assert made.status_code == 201, made.content

    def test_the_live_inbox_counts_only_the_viewers_spaces(self, clients):
        from notify import live

        assert live.counts(clients["sam"])["pending_count"] == 2  # northrail's and his own, not acme's
        assert live.counts(clients["rita"])["pending_count"] == 2  # acme's and northrail's, not sam's personal one
        assert live.newest_pending(clients["sam"]) == clients["pending"]["personal:sam"].pk
