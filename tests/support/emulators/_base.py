"""What every provider emulator shares: the rule and verdict records, judging, and the HTTP server.

An API module describes one provider API as an `ApiSpec`: its rules (each a pure check over the
parsed request body), which paths it serves, and how it shapes a success and an error reply. This
module turns a spec into verdicts (`judge_spec`) and into a loopback server (`Emulator`).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ._loopback import ensure_loopback

__all__ = [
    "ApiSpec",
    "Check",
    "Emulator",
    "Reply",
    "Route",
    "Rule",
    "Verdict",
    "json_reply",
    "judge_spec",
    "model_of",
    "objects",
    "sse",
]

#: Verdict.rule for requests no provider rule judged: the body was not JSON, or the path is unknown.
MALFORMED_JSON = "http.malformed_json"
UNKNOWN_PATH = "http.unknown_path"

#: The server closes a connection that sends nothing for this long (a request never hangs).
DEFAULT_REQUEST_TIMEOUT = 10.0


@dataclass(frozen=True)
class Rule:
    """One documented provider rule (`id` is stable: tables and tests name it)."""

    id: str
    api: str
    verified: bool
    message: str


@dataclass(frozen=True)
class Verdict:
    """What the emulator decided about one request."""

    accepted: bool
    rule: str | None
    verified: bool | None
    status: int
    message: str
    path: str
    body: object


#: A rule's check: the parsed request body and the model name (from the path, or the body) in,
#: the filled-in error message out, or None when the request keeps the rule.
Check = Callable[[Mapping[str, Any], str], "str | None"]


@dataclass(frozen=True)
class Route:
    """A path the API serves: the model it names ('' if none) and whether it answers streaming."""

    model: str
    stream: bool
    #: An API-specific answer form (Gemini: "array" for streamGenerateContent without alt=sse).
    form: str = ""


@dataclass(frozen=True)
class Reply:
    """One HTTP response, ready to send."""

    status: int
    headers: Mapping[str, str]
    body: bytes


def model_of(route: Route, body: Mapping[str, Any]) -> str:
    """The model a request names: from its path, else its body's "model" field."""
    model = route.model or body.get("model")
    return model if isinstance(model, str) and model else "emulated-model"


def objects(value: object) -> list[Mapping[str, Any]]:
    """The JSON objects in `value` if it is a list (anything else: none), for defensive checks."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def json_reply(status: int, payload: object, headers: Mapping[str, str] | None = None) -> Reply:
    """A JSON response."""
    return Reply(
        status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(payload).encode()
    )


def sse(events: list[tuple[str | None, object]]) -> Reply:
    """A complete server-sent-events body: `event:` lines where a name is given, `data:` JSON."""
    lines: list[str] = []
    for name, data in events:
        if name is not None:
            lines.append(f"event: {name}")
        lines.append(f"data: {data if isinstance(data, str) else json.dumps(data)}")
        lines.append("")
    return Reply(200, {"Content-Type": "text/event-stream"}, ("\n".join(lines) + "\n").encode())


@dataclass(frozen=True)
class ApiSpec:
    """One provider API: its rules with their checks, its routes, and its reply shapes."""

    api: str
    checks: tuple[tuple[Rule, Check], ...]
    #: path (without query) and query string -> Route, or None for an unknown path (404).
    route: Callable[[str, str], Route | None]
    #: Route and body of an accepted request -> the minimal valid answer.
    ok: Callable[[Route, Mapping[str, Any]], Reply]
    #: status, message and the rejecting rule id (None: an HTTP-level error) -> the error reply.
    error: Callable[[int, str, str | None], Reply]
    #: Rules that only the opt-in `strict_templates` flag enforces (OpenAI-compatible templates).
    optional: frozenset[str] = field(default_factory=frozenset)

    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(rule for rule, _ in self.checks)


def judge_spec(
    spec: ApiSpec,
    body: object,
    *,
    model: str = "",
    path: str = "",
    enforce_unverified: bool = True,
    strict_templates: bool = False,
) -> Verdict:
    """The first rule `body` breaks (in the spec's order), or an acceptance.

    `model` is the model the path names; without one, the body's "model" field is used.
    """
    if not isinstance(body, Mapping):
        message = "The request body must be a JSON object."
        return Verdict(False, MALFORMED_JSON, None, 400, message, path, body)
    if not model and isinstance(body.get("model"), str):
        model = body["model"]
    for rule, check in spec.checks:
        if not rule.verified and not enforce_unverified:
            continue
        if rule.id in spec.optional and not strict_templates:
            continue
        broken = check(body, model)
        if broken is not None:
            return Verdict(False, rule.id, rule.verified, 400, broken, path, body)
    return Verdict(True, None, None, 200, "", path, body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    emulator: Emulator

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up or stalls is routine for a test server: no traceback for it."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: without it each reply waits ~40 ms
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.emulator.request_timeout)  # never hang on a client

    def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows verdicts instead
        return

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def do_POST(self) -> None:
        try:
            raw = self._read_body()
        except (TimeoutError, ValueError):
            self.close_connection = True
            return
        self._send(self.server.emulator.handle(self.path, raw))

    def do_GET(self) -> None:
        self._send(self.server.emulator.handle(self.path, None))


class Emulator:
    """One running loopback server for one provider API (also a context manager)."""

    def __init__(
        self,
        spec: ApiSpec,
        *,
        enforce_unverified: bool = True,
        strict_templates: bool = False,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        base_suffix: str = "",
    ) -> None:
        self.spec = spec
        self.api = spec.api
        self.rules = spec.rules
        self.enforce_unverified = enforce_unverified
        self.strict_templates = strict_templates
        self.request_timeout = request_timeout
        self.verdicts: list[Verdict] = []
        self._lock = threading.Lock()
        try:
            self._server = _Server(("127.0.0.1", 0), _Handler)
        except OSError as error:
            raise RuntimeError(f"the {spec.api} emulator cannot start on 127.0.0.1: {error}") from error
        self._server.emulator = self
        self.port: int = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        #: What the provider's SDK needs after base_url (OpenAI's clients want ".../v1").
        self.sdk_base_url = self.base_url + base_suffix
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name=f"emulator-{spec.api}-{self.port}",
        )
        self._thread.start()
        try:
            ensure_loopback(self.port)
        except (RuntimeError, OSError) as error:
            self.close()
            raise RuntimeError(f"the {spec.api} emulator is unreachable on 127.0.0.1: {error}") from error

    def handle(self, raw_path: str, raw: bytes | None) -> Reply:
        """Judge one request (body None: not a POST), record the verdict, and build the reply."""
        parts = urlsplit(raw_path)
        route = self.spec.route(parts.path, parts.query) if raw is not None else None
        if route is None:
            message = f"Unknown path: {'POST' if raw is not None else 'GET'} {parts.path}"
            verdict = Verdict(False, UNKNOWN_PATH, None, 404, message, raw_path, None)
        else:
            try:
                body: object = json.loads(raw or b"")
            except ValueError as error:
                message = f"We could not parse the JSON body of your request. ({error})"
                verdict = Verdict(
                    False, MALFORMED_JSON, None, 400, message, raw_path, (raw or b"").decode(errors="replace")
                )
            else:
                if isinstance(body, Mapping) and body.get("stream") is True:
                    route = Route(route.model, True, route.form)
                verdict = judge_spec(
                    self.spec,
                    body,
                    model=route.model,
                    path=raw_path,
                    enforce_unverified=self.enforce_unverified,
                    strict_templates=self.strict_templates,
                )
        with self._lock:
            self.verdicts.append(verdict)
        if verdict.accepted:
            assert isinstance(verdict.body, Mapping) and route is not None
            return self.spec.ok(route, verdict.body)
        return self.spec.error(verdict.status, verdict.message, verdict.rule)

    def clear(self) -> None:
        """Forget every recorded verdict."""
        with self._lock:
            self.verdicts.clear()

    def last(self) -> Verdict:
        """The verdict on the newest request."""
        with self._lock:
            if not self.verdicts:
                raise LookupError(f"the {self.api} emulator at {self.base_url} has received no request")
            return self.verdicts[-1]

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Emulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Emulator {self.api} at {self.base_url}>"
