"""Release strings ordered as PEP 440 orders them, and the command line's fast paths that rely on it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from histfix._release.installed import _package_folders
from histfix._release.pinned import release_pins
from histfix._release.versions import compare, satisfies

_NUMBER = st.integers(0, 12).map(str) | st.sampled_from(["0", "00", "010", "60", "68"])
_PLAIN = st.lists(_NUMBER, min_size=1, max_size=4).map(".".join)
_SUFFIX = st.sampled_from(["", "", "rc1", "a2", ".post1", ".dev0", "+local", "-1", "b0.dev3"])
_VERSION = st.builds(
    lambda prefix, plain, suffix: prefix + plain + suffix,
    st.sampled_from(["", "", "v", "1!"]),
    _PLAIN,
    _SUFFIX,
)


def _packaging(first: str, second: str) -> int | None:
    try:
        a, b = Version(first), Version(second)
    except InvalidVersion:
        return None
    return (a > b) - (a < b)


@given(_VERSION, _VERSION)
def test_compare_orders_as_packaging_does(first: str, second: str) -> None:
    assert compare(first, second) == _packaging(first, second)


@given(_VERSION | _PLAIN, st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "~="]), _VERSION | _PLAIN)
def test_satisfies_is_what_packaging_specifiers_say(version: str, operator: str, bound: str) -> None:
    try:
        expected = SpecifierSet(operator + bound).contains(version, prereleases=True)
    except InvalidSpecifier:
        return  # not a specifier packaging reads: no pin histfix writes
    assert satisfies(version, operator + bound) is expected


@pytest.mark.parametrize(
    ("first", "second", "order"),
    [
        ("2.60.0", "2.60", 0),  # PEP 440 pads the shorter release with zeros
        ("2.0", "2", 0),
        ("1.0.0", "1", 0),
        ("2.60.0", "2.59.9", 1),
        ("2.9.1", "2.10.0", -1),  # by numbers, not as text
        ("2.60.0rc1", "2.60.0", -1),  # a pre-release comes before its release
        ("2.60.0.post1", "2.60.0", 1),
        ("02.060", "2.60.0", 0),
        ("not a version", "2.60.0", None),
        ("2.60.0", "\uff12.60.0", None),  # a full-width 2 is no PEP 440 digit
    ],
)
def test_compare_on_the_boundaries_histfix_asks_about(first: str, second: str, order: int | None) -> None:
    assert compare(first, second) == order == _packaging(first, second)


@pytest.mark.parametrize(
    ("version", "specifier", "met"),
    [
        ("1.38.0", "<1.39", True),
        ("1.39", "<1.39.0", False),
        ("1.45.0", "<1.39", False),
        ("9.0", "<10", True),  # numbers, not text; the bound is all that follows "<"
        ("10.1", "<10", False),
        ("1.39.0rc1", "<1.39", False),  # a pre-release of the bound is below it, yet not allowed
        ("1.38.0", ">1.39", False),  # only "<" is ordered without packaging
        ("1.39", "<=1.39", True),
    ],
)
def test_satisfies_the_pins_histfix_writes(version: str, specifier: str, met: bool) -> None:
    assert satisfies(version, specifier) is met is SpecifierSet(specifier).contains(version, prereleases=True)


def test_plain_releases_are_ordered_without_packaging() -> None:
    """What the fast paths rely on, on every release (the pin check itself runs only on old ones)."""
    script = (
        "import sys\n"
        "from histfix._release.versions import compare, satisfies\n"
        "assert compare('2.9.1', '2.10.0') == -1 and satisfies('1.38.0', '<1.39')\n"
        "print('packaging' in sys.modules)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert found.stdout.strip() == "False"


def test_release_pins_refuse_a_version_that_is_not_pep_440() -> None:
    assert release_pins("1.0.0") == ["opentelemetry-api<1.39"] and release_pins("1.32.0") == []
    with pytest.raises(ValueError, match="not a PEP 440 version"):
        release_pins("weird")


def test_the_source_read_is_the_package_import_finds() -> None:
    spec = importlib.util.find_spec("pydantic_ai")
    assert spec is not None
    assert _package_folders() == list(spec.submodule_search_locations or ())


@pytest.mark.parametrize("argv", [["info"], ["--version"], ["--help"]])
def test_the_fast_paths_import_neither_pydantic_ai_nor_packaging_nor_typing(argv: list[str]) -> None:
    script = (
        "import sys, contextlib, io\n"
        "from histfix._cli.commands import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main({argv!r})\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic_ai', 'packaging', 'typing'}))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert found.stdout.strip() == "[]"  # on a release that needs a pin, info checks it all the same
