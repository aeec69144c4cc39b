"""The address guard for fetched client metadata documents, as a table:
every embedded IPv4 form is unwrapped, the special-purpose ranges are
refused, and loopback is decided on IP literals, never on how a name looks."""

from __future__ import annotations

import socket

import pytest

from mcp_bridge.oauth import addresses, cimd

TEREDO_LOOPBACK = "2001:0:4136:e378:8000:63bf:80ff:fffe"  # Teredo whose client is 127.0.0.1

# (address, refused?, a word the refusal names)
TABLE = [
    # public, and public IPv4 spelled as IPv6 the way real hosts do
    ("93.184.215.14", False, ""),
    ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", False, ""),
    ("::ffff:93.184.215.14", False, ""),
    ("64:ff9b::5db8:d70e", False, ""),  # NAT64 of 93.184.215.14 (an IPv6-only host behind DNS64)
    # IPv4 special-purpose
    ("127.0.0.1", True, "loopback"),
    ("127.255.255.254", True, "loopback"),
    ("0.0.0.0", True, "this network"),
    ("10.1.2.3", True, "private"),
    ("172.31.255.255", True, "private"),
    ("192.168.0.1", True, "private"),
    ("100.64.0.1", True, "carrier-grade"),
    ("169.254.169.254", True, "link-local"),
    ("192.0.0.8", True, "IETF"),
    ("192.0.2.1", True, "documentation"),
    ("198.18.0.1", True, "benchmarking"),
    ("192.88.99.1", True, "6to4 relay"),
    ("224.0.0.1", True, "multicast"),
    ("240.0.0.1", True, "reserved"),
    ("255.255.255.255", True, "reserved"),
    # IPv6 special-purpose
    ("::1", True, "loopback"),
    ("::", True, "unspecified"),
    ("fe80::1", True, "link-local"),
    ("fec0::1", True, "site-local"),
    ("feff::1", True, "site-local"),
    ("fd00::1", True, "unique-local"),
    ("ff02::1", True, "multicast"),
    ("100::1", True, "discard"),
    ("2001:db8::1", True, "documentation"),
    ("3fff::1", True, "documentation"),
    ("5f00::1", True, "segment-routing"),
    ("64:ff9b:1::a00:1", True, "local-use NAT64"),
    # embedded IPv4, unwrapped
    ("::ffff:127.0.0.1", True, "loopback"),
    ("::ffff:10.0.0.1", True, "embeds 10.0.0.1"),
    ("::127.0.0.1", True, "embeds 127.0.0.1"),
    ("::10.0.0.1", True, "embeds 10.0.0.1"),
    ("::93.184.215.14", True, "IPv4-compatible"),
    ("2002:7f00:1::", True, "embeds 127.0.0.1"),
    ("2002:a9fe:a9fe::", True, "embeds 169.254.169.254"),
    ("2002:c0a8:101::1", True, "embeds 192.168.1.1"),
    ("2002:5db8:d70e::1", True, "6to4"),  # deprecated even around a public address
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", True, "embeds 127.0.0.1"),  # Teredo, client 127.0.0.1
    ("2001:0:5db8:d70e:0:0:a247:28f1", True, "Teredo"),  # server and client both public
    ("64:ff9b::7f00:1", True, "embeds 127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", True, "embeds 169.254.169.254"),
    ("64:ff9b::c0a8:1", True, "embeds 192.168.0.1"),
    ("fe80::1%eth0", True, "link-local"),
]


@pytest.mark.parametrize(("address", "refused", "word"), TABLE)
def test_the_address_table(address, refused, word):
    why = addresses.refusal(address)
    assert (why is not None) is refused, (address, why)
    if refused:
        assert word.lower() in why.lower(), (address, why)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"])
def test_loopback_is_allowed_only_when_the_policy_says_so(address):
    assert addresses.refusal(address, allow_loopback=True) is None
    assert "loopback" in (addresses.refusal(address, allow_loopback=False) or "")


@pytest.mark.parametrize("address", ["2002:7f00:1::", "64:ff9b::7f00:1", "::127.0.0.1", TEREDO_LOOPBACK])
def test_a_wrapped_loopback_is_refused_even_when_loopback_is_allowed(address):
    assert addresses.refusal(address, allow_loopback=True) is not None


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.9.9.9", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("127.evil.example", False),
        ("127.0.0.1.nip.io", False),
        ("127.1", False),
        ("0x7f.0.0.1", False),
        ("localhost.evil.example", False),
        ("[::ffff:7f00:1]", False),
        ("[2002:7f00:1::]", False),
    ],
)
def test_loopback_hosts_are_ip_literals_or_localhost_only(host, loopback):
    assert addresses.is_loopback_literal(host) is loopback


@pytest.mark.parametrize("uri", ["http://127.evil.example/cb", "http://127.0.0.1.nip.io:8000/cb", "http://127.1/cb"])
def test_a_redirect_uri_to_a_name_that_looks_like_loopback_is_refused(uri):
    assert "loopback" in (cimd.redirect_uri_problem(uri) or "")


@pytest.mark.parametrize("uri", ["http://127.0.0.1:33418/callback", "http://[::1]:8000/cb", "http://localhost:9/cb"])
def test_a_loopback_redirect_uri_is_accepted(uri):
    assert cimd.redirect_uri_problem(uri) is None


def test_a_document_url_on_a_name_that_looks_like_loopback_needs_https():
    with pytest.raises(cimd.DocumentRefused, match="https"):
        cimd.fetch_document("http://127.evil.example/client.json", cimd.Policy(allow_loopback_http=True))


@pytest.mark.parametrize("address", ["2002:7f00:1::", "fec0::1", "64:ff9b::a9fe:a9fe", TEREDO_LOOPBACK])
def test_the_fetch_refuses_a_name_resolving_to_a_wrapped_or_special_address(monkeypatch, address):
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, 443, 0, 0))]
    )
    with pytest.raises(cimd.DocumentRefused, match="resolves to a refused address"):
        cimd.fetch_document("https://innocent.example/client.json", cimd.Policy())
