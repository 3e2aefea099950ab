"""histfix: repair and trim pydantic-ai message histories on every release from 1.0.0 on.

``classify`` says where a stored history stands (complete, waiting on calls or a request,
interrupted, broken) before you persist or continue it. ``repair`` gives the newest upstream ``repair_messages`` behaviour in the installed release's own
types; ``keep_last_turns`` and ``trim_to_budget`` trim without splitting a tool call from its
result; ``agent_options`` wires repair (and trimming) into an ``Agent`` on every release.
Importing histfix does not import pydantic-ai; the first call does.
"""

from __future__ import annotations

# Neither importlib nor typing is imported at run time: `histfix --help` imports this package.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._public import *  # noqa: F403  (every public name, as type checkers and readers see them)

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """Every public name but ``__version__`` is :mod:`._public`'s, imported on first use (PEP 562) and
    read from there each time: nothing is written into this module. ``__all__`` is their names."""
    if name.startswith("_") and name != "__all__":  # no public name (and the import below asks for one)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _public

    if name == "__all__":
        return [*_names(_public), "__version__"]
    if not hasattr(_public, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_public, name)


def _names(module: object) -> list[str]:
    return sorted(name for name in vars(module) if not name.startswith("_"))


def __dir__() -> list[str]:
    from . import _public

    return sorted({*globals(), *_names(_public)})
