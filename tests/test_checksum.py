"""The approved-content checksum: documented, stable, sensitive to every content field."""

import hashlib

import pytest

from reviews.checksum import canonical_bytes, content_checksum

BASE = {
    "kind": "fact",
    "space": "team",
    "title": "Billing API",
    "body": "Lives in acme/billing-api.",
    "tags": ["billing", "repos"],
}


def test_checksum_is_sha256_of_the_documented_canonical_form():
    expected = (
        b'{"body":"Lives in acme/billing-api.","kind":"fact","scope":"team",'
        b'"tags":["billing","repos"],"title":"Billing API","v":1}'
    )
    assert canonical_bytes(**BASE) == expected
    assert content_checksum(**BASE) == hashlib.sha256(expected).hexdigest()


def test_checksum_is_stable_across_runs():
    # A golden value: if this changes, every stored checksum in every
    # deployment would stop matching. Bump the canonical version instead.
    assert content_checksum(**BASE) == "cd5b38f5d4262bcbefcc5cc7c2cb4ab6041594fff80a847b0579ded369ce63e3"


@pytest.mark.parametrize(
    "field,value",
    [
        ("kind", "decision"),
        ("space", "personal"),
        ("title", "Billing API!"),
        ("body", "Lives in acme/billing-api"),
        ("tags", ["billing"]),
        ("tags", ["billing", "repos", "x"]),
    ],
)
def test_any_content_edit_changes_the_checksum(field, value):
    assert content_checksum(**{**BASE, field: value}) != content_checksum(**BASE)


def test_tag_order_does_not_matter():
    assert content_checksum(**{**BASE, "tags": ["repos", "billing"]}) == content_checksum(**BASE)


def test_line_endings_and_unicode_normalisation_do_not_matter():
    nfd = "Cafe\u0301 opens at nine.\r\nEvery day."
    nfc = "Caf\u00e9 opens at nine.\nEvery day."
    assert content_checksum(**{**BASE, "body": nfd}) == content_checksum(**{**BASE, "body": nfc})


def test_non_ascii_is_hashed_as_utf8_not_escaped():
    assert "é".encode() in canonical_bytes(**{**BASE, "title": "Café"})
