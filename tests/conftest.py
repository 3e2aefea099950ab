"""Shared fixtures: what release is installed, and the corpus as pytest parameters."""

from __future__ import annotations

import warnings
from importlib import metadata

import pytest
from packaging.version import Version

from pydantic_ai import messages as pai


def installed_version() -> Version:
    for dist in ("pydantic-ai-slim", "pydantic-ai"):
        try:
            return Version(metadata.version(dist))
        except metadata.PackageNotFoundError:
            continue
    raise RuntimeError("pydantic-ai is not installed")


PYDANTIC_AI = installed_version()
HAS_UPSTREAM_REPAIR = hasattr(pai, "repair_messages")


def pytest_report_header(config: pytest.Config) -> str:
    import histfix

    info = histfix.backend_info()
    return f"pydantic-ai {PYDANTIC_AI} ({info.distribution}); histfix auto backend: {info.backend} ({info.reason})"


# Constructing RetryPromptPart is deprecated from 2.60.0; the suite still builds legacy shapes.
warnings.filterwarnings("ignore", message=r".*RetryPromptPart.* is deprecated", category=DeprecationWarning)
