"""Shared fixtures: what release is installed, and the corpus as pytest parameters.

Nothing here imports pydantic-ai at import time: under pytest-xdist the controller loads this file
too, but runs no test, and importing pydantic-ai there (about a second, before any worker starts,
and again for the record at the end) would be a serial cost in each of the 14 `tests` sessions. The
workers import it with the tests and hand the controller what it needs (``_BACKEND_KEY``).
"""

from __future__ import annotations

import signal
import warnings
from collections.abc import Iterator
from importlib import metadata
from typing import Any

import pytest
from packaging.version import Version

# Tests interrupt child processes with SIGINT as Ctrl-C would. A run started as a background job of
# a non-interactive shell (`nox ... &`) starts with SIGINT ignored, and passes that on to every child,
# whose Python then raises no KeyboardInterrupt: children start with the default action from here.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: The store tests' PostgreSQL server fixture (``pg_server``), from tests/support; a plugin here rather
#: than a conftest in tests/store, whose module would take the name ``conftest`` the tests import from.
#: long_lived: full garbage collections skip what an earlier one found alive (tests/support/long_lived.py).
pytest_plugins = ["postgres_server", "long_lived"]


def installed_version() -> Version:
    for dist in ("pydantic-ai-slim", "pydantic-ai"):
        try:
            return Version(metadata.version(dist))
        except metadata.PackageNotFoundError:
            continue
    raise RuntimeError("pydantic-ai is not installed")


PYDANTIC_AI = installed_version()


def __getattr__(name: str) -> Any:
    """``HAS_UPSTREAM_REPAIR`` (feature detection: it imports pydantic-ai) on first use, so that
    only processes that run tests import pydantic-ai (see the module docstring)."""
    if name == "HAS_UPSTREAM_REPAIR":
        from pydantic_ai import messages as pai

        globals()[name] = found = hasattr(pai, "repair_messages")
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def mistral_profile_fits_ids() -> bool:
    """Whether the installed release's own Mistral model profile asks for 9-character tool call ids
    (so MistralModel rewrites the ids that do not fit): read from the profile, not from histfix."""
    from pydantic_ai.profiles.mistral import mistral_model_profile

    profile: Any = mistral_model_profile("mistral-large-latest")
    if isinstance(profile, dict):  # a TypedDict from 2.x on; a dataclass (or None) before
        return profile.get("tool_call_id_length") is not None
    return getattr(profile, "tool_call_id_length", None) is not None


def _backend() -> dict[str, Any]:
    """What ``histfix.backend_info()`` says on this release, as plain data (it imports pydantic-ai)."""
    import histfix

    info = histfix.backend_info()
    return {
        "distribution": info.distribution,
        "backend": info.backend,
        "reason": info.reason,
        "features": dict(info.features),
    }


def _backend_line(backend: dict[str, Any]) -> str:
    return (
        f"pydantic-ai {PYDANTIC_AI} ({backend['distribution']}); "
        f"histfix auto backend: {backend['backend']} ({backend['reason']})"
    )


def _is_xdist_controller(config: pytest.Config) -> bool:
    """True in the process that hands tests to pytest-xdist workers and runs none itself."""
    return config.pluginmanager.hasplugin("dsession")


def pytest_report_header(config: pytest.Config) -> str:
    if _is_xdist_controller(config):
        return f"pydantic-ai {PYDANTIC_AI}; the histfix backend line follows the results (from a worker)"
    return _backend_line(_backend())


# Constructing RetryPromptPart is deprecated from 2.60.0; the suite still builds legacy shapes.
warnings.filterwarnings("ignore", message=r".*RetryPromptPart.* is deprecated", category=DeprecationWarning)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-outcome",
        metavar="FILE",
        help="write this run's outcome and the installed release's repair path as JSON (for compat-matrix.md)",
    )


# --- one worker per provider SDK ---------------------------------------------------------------------

#: The SDK (and pydantic-ai model module) each emulated API's client imports, and each prefix's.
SDK_OF = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "bedrock": "bedrock",
    "mistral": "mistral",
    # prefixes whose own model class and SDK speak one of those APIs (wire.PREFIX_BUILDERS)
    "groq": "groq",
    "huggingface": "huggingface",
    # OpenAI-compatible gateways' providers (2.78.0+), through the openai SDK
    "otari": "openai",
    "stav": "openai",
    "cloudflare": "openai",
    # models whose rules differ from their API's default client's (wire.BEDROCK_LLAMA, LEGACY_CLAUDE,
    # SYSTEM_BLOCKS_CHAT)
    "bedrock:us.meta.llama3-3-70b-instruct-v1:0": "bedrock",
    "anthropic:claude-3-5-haiku-latest": "anthropic",
    "openai-chat (no inline system prompts)": "openai",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "uses_sdk(*apis): drives the installed release's SDK clients for these provider APIs (none"
        " named: the test's `api` parameter); under `--dist loadgroup` all tests of one SDK share a worker",
    )


def sdk_group(item: pytest.Item) -> str | None:
    """The worker group of a test marked ``uses_sdk``: ``sdk-<SDK of the first API it names>``."""
    marker = item.get_closest_marker("uses_sdk")
    if marker is None:  # (an unmarked test that sends still runs: on any worker, importing its SDK there)
        return None
    callspec = getattr(item, "callspec", None)
    apis = list(marker.args) or ([callspec.params["api"]] if callspec and "api" in callspec.params else [])
    if not apis or any(api not in SDK_OF for api in apis):
        raise pytest.UsageError(f"{item.nodeid}: uses_sdk needs provider APIs of {sorted(SDK_OF)}")
    return f"sdk-{SDK_OF[apis[0]]}"


#: workerinput key: the folder where each worker writes its collection's {node id: SDK group}.
_GROUPS_KEY = "histfix-sdk-groups"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Importing an SDK and pydantic-ai's model class for it costs about a second (each of five), in
    every worker that sends through it: with each SDK's tests on one worker (``--dist loadgroup``,
    noxfile.PARALLEL; the scheduler below), a session imports each SDK once, not once per worker.

    pytest-xdist's own loadgroup cannot do it here: it renames the node ids, which pytest 9.2 no
    longer lets a plugin do (pytest-xdist issue 1386), so its ``xdist_group`` marks are silently
    ignored. Instead each worker writes its groups to a file the controller's scheduler reads.
    """
    groups = {item.nodeid: group for item in items if (group := sdk_group(item)) is not None}
    folder = getattr(config, "workerinput", {}).get(_GROUPS_KEY)
    if folder:  # written before the worker reports its collection, so the scheduler finds it
        import json
        from pathlib import Path

        worker = config.workerinput["workerid"]  # type: ignore[attr-defined]
        Path(folder).mkdir(parents=True, exist_ok=True)
        Path(folder, f"{worker}.json").write_text(json.dumps(groups))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller: tell each worker where to write its groups (one folder per run)."""
    config = node.config
    if not hasattr(config, "_histfix_groups"):
        import tempfile

        config._histfix_groups = tempfile.mkdtemp(prefix="histfix-sdk-groups-")
    node.workerinput[_GROUPS_KEY] = config._histfix_groups


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's load-by-scope scheduling with one scope per test, except that
    the tests of one SDK (the workers' group files) form one scope, so they run on one worker."""
    if config.getoption("dist") != "loadgroup":
        return None
    import json
    from pathlib import Path

    from xdist.scheduler import LoadScopeScheduling

    class BySdk(LoadScopeScheduling):  # type: ignore[misc]
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # every worker has reported its collection by now
                files = sorted(Path(config._histfix_groups).glob("*.json"))  # type: ignore[attr-defined]
                self.groups = json.loads(files[0].read_text()) if files else {}
            return self.groups.get(nodeid, nodeid)

    return BySdk(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = getattr(config, "_histfix_groups", None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


_outcomes: dict[str, int] = {}
#: Failing tests (node id -> the first line of the error), so a sweep can say why a release fails.
_failed: dict[str, str] = {}
#: Scenario outcomes the end-to-end tests measured, for compat-matrix.md (scenario -> outcome).
MEASURED: dict[str, str] = {}
#: Facts about the installed release the end-to-end tests measured, for compat-matrix.md (name -> value).
FACTS: dict[str, str] = {}
#: What tests/profiles/test_provider_truth.py measured: "summary" goes into the record (and the sweep),
#: "detail" (every case's outcome per API and way) into RECORD.providers.json beside it; what
#: tests/profiles/test_provider_generated.py measured, "generated", goes into the record beside "summary".
PROVIDERS: dict[str, Any] = {}


#: user_properties key under which a test's new MEASURED/FACTS entries travel with its report, so
#: that under pytest-xdist (`-n`) the controller, which writes the record, sees what workers measured.
_MEASURED_KEY, _FACTS_KEY = "histfix-measured", "histfix-facts"
_sent: dict[str, dict[str, str]] = {_MEASURED_KEY: {}, _FACTS_KEY: {}}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when != "teardown":
        return
    for key, values in ((_MEASURED_KEY, MEASURED), (_FACTS_KEY, FACTS)):
        new = {name: value for name, value in values.items() if _sent[key].get(name) != value}
        if new:
            report.user_properties.append((key, new))
            _sent[key].update(new)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for key, values in report.user_properties:
        if key == _MEASURED_KEY:
            MEASURED.update(values)
        elif key == _FACTS_KEY:
            FACTS.update(values)
    if report.when == "call" or report.outcome != "passed":
        key = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        _outcomes[key] = _outcomes.get(key, 0) + 1
        if report.outcome == "failed":
            crash = getattr(report.longrepr, "reprcrash", None)
            _failed[report.nodeid] = (crash.message if crash else str(report.longrepr)).split("\n")[0][:300]


#: Under pytest-xdist: what each worker's provider measurement found (its PROVIDERS), sent to the
#: controller when the worker shuts down; each case runs on one worker, so the parts add up.
_worker_providers: list[dict[str, Any]] = []
#: workeroutput key of a worker's ``_backend()``: the controller never imports pydantic-ai itself.
_BACKEND_KEY = "histfix-backend"
_worker_backend: list[dict[str, Any]] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    output = getattr(node, "workeroutput", {})
    found = output.get("histfix-providers")
    if found:
        _worker_providers.append(found)
    if _BACKEND_KEY in output:
        _worker_backend.append(output[_BACKEND_KEY])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _is_xdist_controller(config) and _worker_backend:
        terminalreporter.write_line(_backend_line(_worker_backend[0]))


def add_tally(into: dict[str, Any], part: dict[str, Any]) -> None:
    """Add one worker's count of a way (``provider_bench.tally``) to another's: each history ran on
    one worker, so the names of the histories not accepted are disjoint."""
    into["measured"] = into.get("measured", 0) + part["measured"]
    into["accepted"] = into.get("accepted", 0) + part["accepted"]
    into["not_accepted"] = dict(sorted({**into.get("not_accepted", {}), **part["not_accepted"]}.items()))


#: What an API's entry holds besides its ways' counts (tests/profiles/test_provider_truth.py's summary).
_ENTRY_FIELDS = ("client", "unavailable", "cases", "seconds")


def _merge_truth(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    apis: dict[str, Any] = {}
    for summary in summaries:
        for api, entry in summary["apis"].items():
            into = apis.setdefault(api, {"client": None, "unavailable": None, "cases": 0, "seconds": 0.0})
            into["client"] = into["client"] or entry["client"]
            into["unavailable"] = into["unavailable"] or entry["unavailable"]
            into["cases"] += entry["cases"]
            into["seconds"] = round(into["seconds"] + entry["seconds"], 2)
            for way, counts in entry.items():
                if way not in _ENTRY_FIELDS:
                    add_tally(into.setdefault(way, {}), counts)
    return {
        "sample": summaries[0]["sample"],
        "selected": summaries[0]["selected"],
        "measured": sorted({name for s in summaries for name in s["measured"]}),
        "apis": apis,
        "seconds": max(s.get("seconds", 0.0) for s in summaries),
    }


def _keep_known(into: dict[str, Any], entry: dict[str, Any]) -> None:
    """Merge one worker's client and unavailability reason: the first that is known stays."""
    into["client"] = into["client"] or entry["client"]
    into["unavailable"] = into["unavailable"] or entry["unavailable"]


def _merge_generated(parts: list[dict[str, Any]]) -> dict[str, Any]:
    apis: dict[str, Any] = {}
    for part in parts:
        for api, entry in part["apis"].items():
            into = apis.setdefault(api, {"client": None, "unavailable": None, "seconds": 0.0})
            _keep_known(into, entry)
            into["seconds"] = round(into["seconds"] + entry["seconds"], 2)
            for way in ("profile", "any"):
                add_tally(into.setdefault(way, {}), entry[way])
    refused = sorted({seed for part in parts for seed in part["refused"]})
    return {
        # every worker counts the same seeds' histories (not only its own)
        **{key: parts[0][key] for key in ("sample", "histories", "seeds", "distinct")},
        "refused": refused,
        "apis": apis,
        "seconds": max(part.get("seconds", 0.0) for part in parts),
    }


def merge_providers(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One PROVIDERS from the workers' parts: details unite, counts and seconds add up (the truth
    summary under "summary", the generated histories' under "generated", the prefixes' model
    classes' under "prefixes")."""
    if len(parts) == 1:
        return parts[0]
    merged: dict[str, Any] = {}
    truths = [part for part in parts if "summary" in part]
    if truths:
        detail: dict[str, dict[str, Any]] = {}
        for part in truths:
            for api, cases in part["detail"].items():
                detail.setdefault(api, {}).update(cases)
        merged["summary"] = _merge_truth([part["summary"] for part in truths])
        merged["detail"] = detail
    generated = [part["generated"] for part in parts if "generated" in part]
    if generated:
        merged["generated"] = _merge_generated(generated)
    prefixes = [part["prefixes"] for part in parts if "prefixes" in part]
    if prefixes:
        merged["prefixes"] = _merge_prefixes(prefixes)
    return merged


def _merge_prefixes(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """tests/profiles/test_provider_prefixes.py's summaries: per prefix, cases and way counts add up."""
    merged: dict[str, Any] = {}
    for part in parts:
        for prefix, entry in part["prefixes"].items():
            into = merged.setdefault(prefix, {"client": None, "unavailable": None, "cases": 0})
            _keep_known(into, entry)
            into["cases"] += entry["cases"]
            for way, counts in entry.items():
                if way not in ("client", "unavailable", "cases"):
                    add_tally(into.setdefault(way, {}), counts)
    return {**{key: value for key, value in parts[0].items() if key != "prefixes"}, "prefixes": merged}


@pytest.fixture(scope="session")
def provider_bench() -> Iterator[Any]:
    """The provider tests' one emulator, client and model per API (``tests/support/provider_bench.py``)."""
    from provider_bench import Bench  # imported here: it imports this module (PYDANTIC_AI)

    bench = Bench()
    try:
        yield bench
    finally:
        bench.close()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):  # an xdist worker: hand the controller its part
        output = session.config.workeroutput  # type: ignore[attr-defined]
        if PROVIDERS:
            output["histfix-providers"] = dict(PROVIDERS)
        output[_BACKEND_KEY] = _backend()  # the tests imported pydantic-ai already: cheap here
        return  # the controller saw every report and writes the one record
    if _worker_providers:
        PROVIDERS.update(merge_providers(_worker_providers))
    target = session.config.getoption("--record-outcome")
    if not target:
        return
    import json
    from pathlib import Path

    # every worker runs the same installed release; without workers (`-n 0`), ask here
    backend = _worker_backend[0] if _worker_backend else _backend()
    record = {
        "pydantic_ai": str(PYDANTIC_AI),
        "backend": backend["backend"],
        "reason": backend["reason"],
        "features": backend["features"],
        "outcomes": dict(sorted(_outcomes.items())),
        "scenarios": dict(sorted(MEASURED.items())),
        "facts": dict(sorted(FACTS.items())),
        "failed": _failed,
        "exitstatus": int(exitstatus),
        "providers": PROVIDERS.get("summary"),
        "providers_generated": PROVIDERS.get("generated"),
        "providers_prefixes": PROVIDERS.get("prefixes"),
    }
    Path(target).write_text(json.dumps(record, indent=2) + "\n")
    detail = Path(target).with_suffix(".providers.json")
    if "detail" in PROVIDERS:
        detail.write_text(json.dumps(PROVIDERS["detail"], indent=1, sort_keys=True) + "\n")
    else:
        detail.unlink(missing_ok=True)
