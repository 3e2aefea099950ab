"""A loader's refusal in one line, as every record of the upgrade check words it.

Both the observation of a history (:mod:`._observe`) and the real round trip (:mod:`._trip`)
report what a loader refused, in the same words.
"""

from __future__ import annotations

from .._oneline import first_line

__all__ = ["loader_error"]


def loader_error(exc: BaseException) -> str:
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
    return first_line(exc)
