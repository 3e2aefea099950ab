"""How much generated and sampled input a ``tests(X)`` session feeds its properties: one decision.

Every assertion runs on every pinned release; what varies is how many generated histories feed the
property tests. The releases measured in full (the oldest pinned, the newest, and any newer one
`nox -s latest` installs) draw the whole set; the others a fixed quarter of it, beside the corpus
that every release runs whole. The walk is one piece of code on every release: what differs
between releases is the types it builds and the wire their model classes send, which the corpus
and the sweeps (tests/data/sweep*.json) cover. Fifteen sessions share two cores, so this share is
what keeps the default `nox` run within its budget (docs/contributing/budget.md).

``HISTFIX_TEST_VOLUME=full`` draws the whole set on any release, ``=sample`` the share on any.
"""

from __future__ import annotations

import os

from packaging.version import Version

from histfix._release.pinned import NEWEST, PINNED_RELEASES

from conftest import PYDANTIC_AI

VOLUME_ENV = "HISTFIX_TEST_VOLUME"
#: The pinned releases that draw everything: the oldest (its serializers differ most) and the newest.
FULL_RELEASES = frozenset({PINNED_RELEASES[0], NEWEST})
#: Off the full releases, a property draws one in SHARE of its histories (at least one).
SHARE = 4


def _full() -> bool:
    wanted = os.environ.get(VOLUME_ENV, "").strip().lower()
    if wanted in ("full", "sample"):
        return wanted == "full"
    if wanted:
        raise ValueError(f"{VOLUME_ENV} is 'full' or 'sample', not {wanted!r}")
    return str(PYDANTIC_AI) in FULL_RELEASES or Version(NEWEST) < PYDANTIC_AI


#: Whether this session draws the whole set.
FULL = _full()


def sized(count: int) -> int:
    """How many of ``count`` generated histories this session draws."""
    return count if FULL else max(1, count // SHARE)
