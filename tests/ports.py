"""A free TCP port on 127.0.0.1 for a server or cluster a test starts."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port no socket holds now (the OS's pick); the caller binds it soon after."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
