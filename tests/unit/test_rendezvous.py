"""Ports handed to another process are picked where an outgoing connection cannot take them."""

from __future__ import annotations

import os
import socket

import pytest

from trialkit import rendezvous
from trialkit.rendezvous import free_port, free_ports


def _ephemeral_range() -> tuple[int, int]:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low, high = (int(x) for x in f.read().split())
    return low, high


@pytest.mark.skipif(
    not os.path.exists("/proc/sys/net/ipv4/ip_local_port_range"),
    reason="Linux's ephemeral port range is not readable here",
)
def test_handed_out_ports_are_outside_the_kernels_ephemeral_range():
    # CI: a chief's bind failed with EADDRINUSE on a port picked by binding port 0 (so from the
    # ephemeral range), which an outgoing connection on the busy Ray node had taken meanwhile.
    low, high = _ephemeral_range()
    if low <= rendezvous._HANDOUT_LOW + 100:
        pytest.skip(f"the ephemeral range starts at {low}: no room below it on this machine")
    ports = [free_port() for _ in range(50)] + free_ports(20)
    assert not [p for p in ports if low <= p <= high]


def test_free_ports_are_distinct_and_bindable():
    ports = free_ports(16)
    assert len(set(ports)) == 16
    for port in ports:
        with socket.socket() as s:
            s.bind(("", port))


def test_a_port_taken_in_the_range_is_skipped(monkeypatch):
    with socket.socket() as held:
        held.bind(("", free_port()))
        taken = held.getsockname()[1]
        monkeypatch.setattr(rendezvous, "_handout_range", lambda: (taken, taken + 2))
        assert free_port("") == taken + 1


def test_the_kernels_pick_is_the_fallback_without_room(monkeypatch):
    monkeypatch.setattr(rendezvous, "_EPHEMERAL_FILE", "/nonexistent/port_range")
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
