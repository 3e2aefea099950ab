"""One release's side of the upgrade check (``histfix scan SOURCE --against RELEASE``).

:func:`observe` says what the installed pydantic-ai and histfix do with one stored history. The
installed release (A) runs it in the scanning process; every other release (B) runs it in a
long-lived ``python -m histfix.store._upgrade_probe`` inside that release's cached environment
(the one ``histfix compare`` builds), which reads batches as JSON lines on stdin and answers each
with one JSON line on stdout, so a store costs one interpreter start per release, not per history.

The probe only needs the standard library, pydantic-ai and histfix (put on its path by the caller).
"""

from __future__ import annotations

import base64
import json
import sys
from collections import Counter
from typing import Any

__all__ = ["loader_error", "main", "observe"]

Json = dict[str, Any]


def loader_error(exc: Exception) -> str:
    """A loader's failure in one line: pydantic's first error with where it is, else the message."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            found = errors()
        except Exception:  # not pydantic's ValidationError after all
            found = None
        if found:
            first = found[0]
            where = ".".join(str(step) for step in first.get("loc", ())) or "(the whole history)"
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            return f"{where}: {first.get('msg', '')}{more}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _sent_verdict(history: bytes, parsed: object, provider: str | None) -> Json:
    """What a plain Agent sends on this release and what a strict provider says of it, exactly as
    ``histfix compare`` judges it (its own probe and summary); with ``provider``, also what histfix's
    profile of that provider on this release rejects in what is sent."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    import histfix

    from .._compare.outcome import Outcome
    from .._compare.probe import PLAIN, REPAIRED, probe, prompt_for

    observation = probe(history, prompt_for(parsed, None))
    verdict: Json = {
        "sends": Outcome.of(observation, PLAIN).summary(PLAIN),
        "returns": Outcome.of(observation, REPAIRED).summary(REPAIRED),
        "sent_problems": list(observation[PLAIN]["problems"]),
        "provider_rejects": None,
    }
    sent = observation[PLAIN]["messages"]
    if provider is not None and sent is not None:
        messages = ModelMessagesTypeAdapter.validate_python(sent)
        verdict["provider_rejects"] = [p.kind for p in histfix.check(messages, provider=provider)]
    return verdict


def observe(
    history: bytes, *, provider: str | None = None, other_repaired: bytes | None = None, keep: bool = False
) -> tuple[Json, Any, bytes | None]:
    """What the installed release does with one stored history (its JSON list, as bytes).

    Returns the observation (plain JSON data: ``loads`` and ``load_json`` are None or the loader's
    error, ``changes`` what the default ``histfix.repair`` changes, the compare verdicts, and
    ``dump``: pydantic-ai's own ``dump_json`` of what its loader made of it, for the round trip),
    then with ``keep`` pydantic-ai's JSON data of the loaded history and the repaired bytes when
    repair changes it (what the scanning side needs for the round trip and for the other release).
    ``other_repaired``: another release's repair output, to try with this release's own loader.
    Never raises for a bad history: every failure is part of the observation.
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    import histfix

    found: Json = {"loads": None, "load_json": None, "changes": None, "repair_raises": None, "dump": None}
    loaded_data: Any = None
    repaired: bytes | None = None
    try:
        loaded = ModelMessagesTypeAdapter.validate_json(history)
    except Exception as exc:  # ValidationError, or whatever an old release raises on odd input
        found["loads"] = loader_error(exc)
    else:
        if keep:
            loaded_data = ModelMessagesTypeAdapter.dump_python(loaded, mode="json")
        found["dump"] = ModelMessagesTypeAdapter.dump_json(loaded).decode()
    try:
        messages = histfix.load_json(history)
    except Exception as exc:
        found["load_json"] = loader_error(exc)
    else:
        try:
            report = histfix.repair_report(messages)
        except Exception as exc:  # what repair raises is a finding, not a crash
            found["repair_raises"] = f"{type(exc).__name__}: {loader_error(exc)}"
        else:
            found["changes"] = dict(Counter(change.kind for change in report.changes))
            if report.changes and keep:
                repaired = histfix.dump_json(report.messages)
    try:
        found |= _sent_verdict(history, json.loads(history), provider)
    except Exception as exc:
        found |= {"sends": f"the probe failed: {type(exc).__name__}: {loader_error(exc)}"}
        found |= {"returns": None, "sent_problems": [], "provider_rejects": None}
    if other_repaired is not None:
        try:
            ModelMessagesTypeAdapter.validate_json(other_repaired)
            found["loads_other_repair"] = None
        except Exception as exc:
            found["loads_other_repair"] = loader_error(exc)
    return found, loaded_data, repaired


def _answer(request: Json) -> list[Json]:
    provider = request.get("provider")
    answers = []
    for item in request["histories"]:
        other = item.get("other_repaired")
        observation, _, _ = observe(
            base64.b64decode(item["history"]),
            provider=provider,
            other_repaired=None if other is None else base64.b64decode(other),
        )
        answers.append(observation)
    return answers


def main() -> int:
    """Say which release answers (one JSON line), then answer each batch line with one line."""
    try:
        import histfix

        info = histfix.backend_info()
    except Exception as exc:  # a release histfix cannot run on: the caller reports this one line
        print(f"cannot import pydantic-ai and histfix: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3
    print(json.dumps({"release": info.version, "backend": info.backend}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(_answer(json.loads(line))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
