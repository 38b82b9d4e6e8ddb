"""The board behind a reverse proxy: whose X-Forwarded-For the failed-authentication throttle believes.

Starlette's TestClient sets the connection's peer address (``client=(host, port)``), so each test
is a real request through the app; the forwarded header is what a client or a proxy writes.
"""

from __future__ import annotations

import ipaddress

import pytest
from fastapi.testclient import TestClient

from leaderboard.app import Limits, client_address, create_app
from leaderboard.cli import main
from leaderboard.store import Store

TOKEN = "upload-token"
LIMIT = 3


def board(tmp_path, *proxies):
    limits = Limits(failed_auths_per_window=LIMIT, trusted_proxies=proxies)
    return create_app(Store(tmp_path / "board.sqlite"), [TOKEN], limits)


def guess(client, forwarded=None):
    """One wrong token, optionally with an X-Forwarded-For; the status code."""
    headers = {"Authorization": "Bearer wrong"}
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    return client.post("/submissions", json={}, headers=headers).status_code


def test_off_by_default_a_flood_with_varying_forwarded_addresses_is_one_client(tmp_path):
    assert Limits().trusted_proxies == ()
    client = TestClient(board(tmp_path), client=("127.0.0.1", 40000))  # even the loopback is no proxy
    codes = [guess(client, f"198.51.100.{i}") for i in range(LIMIT + 3)]
    assert codes == [403] * LIMIT + [429] * 3
    assert guess(client) == 429  # the address itself is locked out, with or without the header
    assert guess(TestClient(client.app, client=("203.0.113.7", 40000))) == 403  # another peer is not


def test_a_trusted_proxy_s_forwarded_clients_are_counted_apart(tmp_path):
    proxy = TestClient(board(tmp_path, "127.0.0.1"), client=("127.0.0.1", 40000))
    first, second = "198.51.100.1", "198.51.100.2"
    assert [guess(proxy, first) for _ in range(LIMIT + 1)] == [403] * LIMIT + [429]
    assert guess(proxy, second) == 403  # the second client behind the same proxy is not locked out
    assert guess(proxy, f"{second}, {first}") == 429  # what a client prepends is never read
    assert guess(proxy, f"{first}, 127.0.0.1") == 429  # hops that are trusted proxies are skipped
    assert guess(proxy) == 403  # the proxy's own requests are a client of their own


def test_a_forwarded_header_from_an_untrusted_peer_is_ignored(tmp_path):
    app = board(tmp_path, "127.0.0.1")
    stranger = TestClient(app, client=("203.0.113.5", 40000))
    assert [guess(stranger, f"198.51.100.{i}") for i in range(LIMIT + 1)] == [403] * LIMIT + [429]
    proxy = TestClient(app, client=("127.0.0.1", 40000))
    assert guess(proxy, "203.0.113.5") == 429  # the stranger, forwarded by the proxy, is the same client
    assert guess(proxy, "198.51.100.0") == 403  # and the addresses it wrote were never counted


@pytest.mark.parametrize(
    ("peer", "forwarded", "counted_as"),
    [
        ("10.0.0.2", ["198.51.100.1"], "198.51.100.1"),
        ("10.0.0.2", ["192.0.2.9, 198.51.100.1, 10.0.0.3"], "198.51.100.1"),  # two proxies in a row
        ("10.0.0.2", ["192.0.2.9", "198.51.100.1"], "198.51.100.1"),  # repeated headers join in order
        ("10.0.0.2", [], "10.0.0.2"),
        ("10.0.0.2", ["10.0.0.3"], "10.0.0.2"),  # only proxies: the proxy's own request
        ("10.0.0.2", ["198.51.100.1, unknown"], "10.0.0.2"),  # a hop that is no address
        ("10.0.0.2", [" 2001:db8::1 "], "2001:db8::1"),
        ("::ffff:10.0.0.2", ["198.51.100.1"], "198.51.100.1"),  # IPv4-mapped proxy address
        ("203.0.113.5", ["198.51.100.1"], "203.0.113.5"),  # untrusted peer
        ("testclient", ["198.51.100.1"], "testclient"),  # a peer that is no address is never a proxy
        (None, ["198.51.100.1"], "unknown"),
    ],
)
def test_the_client_address_rule(peer, forwarded, counted_as):
    proxies = (ipaddress.ip_network("10.0.0.0/24"),)
    assert client_address(peer, forwarded, proxies) == counted_as
    assert client_address(peer, forwarded, ()) == (peer or "unknown")  # off: the peer, always


def test_trusted_proxies_are_checked_when_given(tmp_path, monkeypatch, capsys):
    assert Limits(trusted_proxies="127.0.0.1").trusted_proxies == ("127.0.0.1",)
    assert Limits(trusted_proxies=["10.0.0.0/8", "::1"]).proxy_networks()[1] == ipaddress.ip_network("::1")
    with pytest.raises(ValueError, match="trusted proxy 'proxy.example' is not an IP address or network"):
        Limits(trusted_proxies=("proxy.example",))
    monkeypatch.setenv("LEADERBOARD_TOKENS", TOKEN)
    command = ["serve", "--db", str(tmp_path / "board.sqlite"), "--trusted-proxy", "127.0.0.1"]
    assert main([*command, "--trusted-proxy", "not-an-address"]) == 2
    assert "trusted proxy 'not-an-address' is not an IP address" in capsys.readouterr().err
