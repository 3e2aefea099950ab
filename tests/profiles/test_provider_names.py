"""Model-name prefixes: each names the API of the model class the installed release builds for it,
or is refused with the one line that says why it has no profile.

A prefix's mapping is a fact about the release's ``infer_model``: where the installed release has the
prefix's provider module (feature detection), the model ``infer_model`` builds for
it resolves to the API the prefix names. The over-the-wire proof of those APIs is in
``test_provider_prefixes.py``. A prefix without a profile (``targets.NO_PROFILE``) is refused by
every ``provider=`` entry point on every release with its reason, and so is its model class where the
release has it; ``provider="auto"`` gives such a model the default repair.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

import histfix
from histfix._profiles.targets import NO_PROFILE, NoProfile, resolve_provider
from histfix._wiring import RepairProcessor

from dsl import call, load, req, resp, user

#: The module that brings each OpenAI-compatible gateway prefix, a model name it serves, and the
#: environment its provider reads (dummy values: building a provider sends nothing).
GATEWAYS: dict[str, tuple[str, str, dict[str, str]]] = {
    "otari": ("pydantic_ai.providers.otari", "openai:gpt-4o", {"OTARI_API_KEY": "test-key-not-real"}),
    "stav": (
        "pydantic_ai.providers.stav",
        "deepseek-ai/deepseek-v4-flash-0731",
        {"STAV_API_KEY": "test-key-not-real"},
    ),
    "cloudflare": (
        "pydantic_ai.models.cloudflare",
        "@cf/meta/llama-4-scout-17b-16e-instruct",
        {"CLOUDFLARE_API_TOKEN": "test-key-not-real", "CLOUDFLARE_ACCOUNT_ID": "histfix-test"},
    ),
}
#: The module that brings each prefix without a profile, and a model it serves.
UNPROFILED: dict[str, tuple[str, str]] = {
    "google-interactions": ("pydantic_ai.models.google_interactions", "gemini-2.5-flash"),
    "cloudflare-decisions": ("pydantic_ai.models.cloudflare_decisions", "@cf/cloudflare/clef-flash"),
}
#: What building those models reads from the environment.
UNPROFILED_ENV = {
    "GOOGLE_API_KEY": "test-key-not-real",
    "CLOUDFLARE_API_TOKEN": "test-key-not-real",
    "CLOUDFLARE_ACCOUNT_ID": "histfix-test",
}


def _skip_without(module: str, prefix: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"no {module} on this release (the {prefix}: prefix arrived later)")


def _infer_model(name: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    from pydantic_ai.models import infer_model

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return infer_model(name)


def _history() -> list[Any]:
    return load([req(user("q")), resp(call("get", "c1"), at=1), req(user("next"))])


@pytest.mark.parametrize("prefix", sorted(GATEWAYS))
def test_a_gateway_prefix_names_the_api_of_the_class_infer_model_builds(
    prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resolve_provider(prefix).apis == ("openai-chat",)  # a name, on every release
    module, model_name, env = GATEWAYS[prefix]
    _skip_without(module, prefix)
    model = _infer_model(f"{prefix}:{model_name}", env, monkeypatch)
    assert "OpenAIChatModel" in [cls.__name__ for cls in type(model).__mro__]
    assert resolve_provider(model).apis == resolve_provider(f"{prefix}:{model_name}").apis == ("openai-chat",)
    history = _history()
    assert histfix.repair(history, provider=prefix) == histfix.repair(history, provider="openai-chat")


@pytest.mark.parametrize("prefix", sorted(UNPROFILED))
def test_a_prefix_without_a_profile_is_refused_with_why(prefix: str) -> None:
    """Every ``provider=`` entry point, on every release: one line, the reason in it, no profile run."""
    history = _history()
    expected = (
        f"no provider profile for {prefix}: {NO_PROFILE[prefix]}; repair it with provider=None (pairing only)"
    )
    for name in (prefix, f"{prefix}:some-model", prefix.upper()):
        for entry in (histfix.repair, histfix.check, histfix.repair_report, histfix.is_provider_valid):
            with pytest.raises(NoProfile) as raised:
                entry(history, provider=name)
            assert str(raised.value) == expected.replace(prefix, name.lower().partition(":")[0], 1)
        with pytest.raises(ValueError, match="no provider profile for"):
            histfix.agent_options(provider=name)
    assert "\n" not in expected and prefix not in histfix.PROVIDER_NAMES


@pytest.mark.parametrize("prefix", sorted(UNPROFILED))
def test_a_model_without_a_profile_is_refused_with_why_and_auto_gives_it_the_default_repair(
    prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, model_name = UNPROFILED[prefix]
    _skip_without(module, prefix)
    model = _infer_model(f"{prefix}:{model_name}", UNPROFILED_ENV, monkeypatch)
    history = _history()
    with pytest.raises(NoProfile) as raised:
        histfix.check(history, provider=model)
    assert str(raised.value) == (
        f"no provider profile for {type(model).__name__}: {NO_PROFILE[prefix]}; repair it with provider=None "
        "(pairing only)"
    )
    # what agent_options(provider="auto") runs for the run's model
    assert RepairProcessor(provider="auto").process(history, model) == histfix.repair(history)
