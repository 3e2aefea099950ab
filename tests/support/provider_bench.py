"""The provider tests' shared session machinery: one emulator, client and model per API.

``tests/profiles/test_provider_truth.py`` (the corpus) and ``tests/profiles/test_provider_generated.py`` (seeded
generated histories) send through the same ``Bench``: one loopback server and one model of the
installed release per API for the whole session (``conftest.provider_bench`` opens and closes it),
each caller keeping its own results and send time. ``tally`` is the count both summaries use.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic_ai import messages as pai

from conftest import PYDANTIC_AI
from emulators import serve
from wire import Client, Driver, Outcome, client_for, prompt_for


class Bench:
    """One emulator, client and outcome cache per API, started on first use and closed at the end.

    ``send``'s ``api`` may also name a prefix with its own model class (``wire.PREFIX_BUILDERS``):
    its client sends to the emulator of the API it speaks."""

    def __init__(self) -> None:
        self.driver = Driver()
        self.emulators: dict[str, Any] = {}
        self.clients: dict[str, Client | str] = {}
        self.cache: dict[tuple[str, bytes, str | None], Outcome] = {}
        self.unavailable: dict[str, str] = {}

    def client(self, api: str) -> Client:
        if api not in self.clients:
            self.clients[api] = client_for(api)
        found = self.clients[api]
        if isinstance(found, str):
            self.unavailable[api] = found
            pytest.skip(found)
        return found

    def emulator(self, api: str) -> Any:
        if api not in self.emulators:
            try:
                self.emulators[api] = serve(api)
            except (RuntimeError, ValueError, OSError) as exc:
                reason = f"{api} emulator on pydantic-ai-slim {PYDANTIC_AI}: {exc}"
                self.unavailable[api] = reason
                pytest.skip(reason)
            _check_loopback(api, self.emulators[api].port)
        return self.emulators[api]

    def send(self, api: str, history: list[pai.ModelMessage], seconds: dict[str, float]) -> Outcome:
        """The outcome of one history on one API (one round trip per distinct history and prompt);
        the time a round trip takes is added to the caller's ``seconds[api]``."""
        key = (api, pai.ModelMessagesTypeAdapter.dump_json(history), prompt_for(history))
        if key not in self.cache:
            client = self.client(api)
            emulator = self.emulator(client.api)  # a prefix's client (GroqModel) goes to its API's emulator
            started = time.perf_counter()
            self.cache[key] = self.driver.send(client, emulator, history)
            seconds[api] = seconds.get(api, 0.0) + time.perf_counter() - started
        return self.cache[key]

    def via(self, api: str) -> str | None:
        """The model and provider classes used for ``api`` (None when it never ran)."""
        client = self.clients.get(api)
        return client.via if isinstance(client, Client) else None

    def close(self) -> None:
        self.driver.close()
        for emulator in self.emulators.values():
            emulator.close()


def tally(outcomes: Mapping[str, Outcome]) -> dict[str, Any]:
    """How many histories one way measured and how many were accepted; the others by label."""
    return {
        "measured": len(outcomes),
        "accepted": sum(o.kind == "accepted" for o in outcomes.values()),
        "not_accepted": {n: o.label() for n, o in sorted(outcomes.items()) if o.kind != "accepted"},
    }


def _check_loopback(api: str, port: int) -> None:
    """Fail clearly when the emulator is listening but unreachable (a network namespace whose
    loopback is down, as `unshare -n` leaves it), rather than with one connect error per case."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError as exc:
        pytest.fail(
            f"{api} emulator on 127.0.0.1:{port} unreachable ({exc}) on pydantic-ai-slim {PYDANTIC_AI}"
        )


__all__ = ["Bench", "tally"]
