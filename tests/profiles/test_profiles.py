"""The profile registry: every rule once, in ORDER, consistent with the rule modules, and the per-target view."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import pytest

import histfix
from histfix._profiles.registry import RULES, in_pass_order, rules_for
from histfix._profiles.targets import PROVIDER_APIS, resolve_provider

from dsl import call, load, req, resp, text


def test_each_rule_is_registered_once_under_its_pass_name() -> None:
    names = [rule.name for rule in RULES]
    assert len(names) == len(set(names))
    with pytest.raises(dataclasses.FrozenInstanceError):  # shared by every run: never changed
        RULES[0].name = "renamed"  # type: ignore[misc]
    for rule in RULES:
        assert rule.fix.__name__ == rule.name
        assert rule.apis and rule.apis <= set(PROVIDER_APIS), rule.name
        assert set(rule.wording) <= rule.apis, rule.name


def test_the_registry_takes_an_order_that_names_each_rule_once_and_nothing_else() -> None:
    rules = RULES[:3]
    order = [(rule.name, "why") for rule in reversed(rules)]
    assert in_pass_order(order, rules) == tuple(reversed(rules))
    faults = {
        "not in ORDER ['" + rules[0].name + "'], no such rule [], named twice []": (order[:2], rules),
        "not in ORDER [], no such rule ['gone'], named twice []": ([*order, ("gone", "why")], rules),
        "not in ORDER [], no such rule [], named twice ['" + rules[1].name + "']": (
            [*order, order[1]],
            rules,
        ),
        "not in ORDER [], no such rule [], named twice ['" + rules[2].name + "']": (
            order,
            (*rules, rules[2]),
        ),
    }
    for message, (bad_order, bad_rules) in faults.items():
        with pytest.raises(RuntimeError) as raised:
            in_pass_order(bad_order, bad_rules)
        assert str(raised.value) == f"ORDER and the rule modules disagree: {message}"


def test_every_pass_with_a_detect_in_a_rule_module_is_registered() -> None:
    """A rule module's pass with a ``detect_`` twin is a rule: none is left out of the registry."""
    registered = {rule.name for rule in RULES}
    modules = {sys.modules[rule.fix.__module__] for rule in RULES}
    passes = {
        name[len("detect_") :]
        for module in modules
        for name in vars(module)
        if name.startswith("detect_") and callable(getattr(module, name[len("detect_") :], None))
    }
    assert len(passes) >= len(RULES) - 1 and passes <= registered, sorted(passes - registered)


def test_the_order_runs_every_before_stage_rule_first() -> None:
    """The one fact of ORDER that is not a reason: the stages are not interleaved."""
    stages = [rule.stage for rule in RULES]
    assert stages == sorted(stages, key=("before", "after").index)


def test_a_target_gets_the_rules_of_its_apis_in_pass_order() -> None:
    for provider in (*PROVIDER_APIS, "any"):
        target = resolve_provider(provider)
        for stage in ("before", "after"):
            chosen = rules_for(target, stage)
            expected = [r for r in RULES if r.stage == stage and set(target.apis) & r.apis]
            assert list(chosen) == expected, (provider, stage)
            assert all(rule.stage == stage for rule in chosen)
            built = "".join(stage)  # an equal string that is not the interned literal
            assert built is not stage and rules_for(target, built) == chosen  # type: ignore[arg-type]


SIGNED_THINKING: dict[str, str] = {"part_kind": "thinking", "content": "a", "signature": "a"}


@pytest.mark.parametrize(
    "messages",
    [
        # alternating_roles merges the thinking into the provider's response
        [req(), req(), resp(text("a"), provider_name="a"), resp(SIGNED_THINKING)],
        # responses_send_something merges it into the next (on releases that send no thinking there)
        [req(), resp(SIGNED_THINKING), resp(call("a", "c"), provider_name="a")],
    ],
    ids=["merged-into-the-previous", "merged-into-the-next"],
)
def test_any_is_a_fixed_point_when_a_late_pass_merges_thinking_into_a_providers_response(
    messages: list[dict[str, Any]],
) -> None:
    """Found by tests/repair/test_fuzz.py on schema-drawn histories (shrunk): a thinking response with a
    signature and no provider, merged by a pass after the signature rules into a response naming a
    provider, which decides whose signature it is. The passes run again on their own output, so
    the first repair already judges the merged response, as a second would."""
    history = load(messages)
    once = histfix.repair(history, provider="any")
    assert histfix.repair(once, provider="any") == once
