"""Parity of state/consumer_group/regex.py (and topics.py's metadata hash) and the native engine's.

The reference checks a SubscribedTopicRegex for RE2J's syntax, then hands it to Python's `re`; the native core
ports that `re` (native/src/python_re.rs), since the Rust `regex` crate accepts and matches other patterns.
Hypothesis builds patterns from the pieces either may trip on (RE2J-only and Python-only constructs, flags
global and scoped, named groups and backreferences, classes with ranges, escapes and case-folded letters,
counted repetitions, verbose mode, unbalanced groups) and both must refuse the same ones with the same message
or fully match the same topic names; the resolution, the refresh decision of a heartbeat and the metadata hash
must agree too.
"""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.consumer_group.records import ResolvedRegularExpression
from state.consumer_group.regex import (InvalidRegularExpression, compile_regex, maybe_update_regular_expressions,
                                        resolve_regular_expressions)
from state.consumer_group.topic_id import TopicId
from state.consumer_group.topics import TopicsImage
from tests.native import cores

PARITY = settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
# The resolution and the hash have few paths: fewer examples cover them.
FEWER = settings(PARITY, max_examples=100)

# Letters whose case folding reaches ASCII in Python's rules (K, ſ, ı, İ), others that do not, and the
# characters of topic names.
PIECES = [
    "a", "b", "f", "o", "k", "s", "i", "A", "K", "S", "I", "0", "9", ".", "_", "-", "é", "\u212a", "\u017f",
    "\u0131", "\u0130", " ", "#", "\n", ",", "2", "12",
    "*", "+", "?", "*?", "{", "}", "{2}", "{1,3}", "{,2}", "{3,1}", "{2,}?", "{4294967295}", "(", ")", "|",
    "[", "]", "[^", "^", "$", "\\",
    "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B", "\\A", "\\z", "\\Z", "\\x6b", "\\x4", "\\u004B",
    "\\U0000212a", "\\U00110000", "\\0", "\\012", "\\.", "\\-", "\\q", "\\1", "\\p", "\\Q", "\\n", "\\t", "\\ ",
    "(?:", "(?i)", "(?i:", "(?-i:", "(?s:", "(?m)", "(?x)", "(?x:", "(?a)", "(?u)", "(?au)", "(?L)", "(?t)",
    "(?-a:", "(?i-i:", "(?-:", "(?q)", "(?P<n>", "(?P<m>", "(?P<1>", "(?P<n", "(?P=n)", "(?P=x)", "(?Px", "(?",
    "(?=", "(?<", "(?#", "[:alpha:]", "*+",
]
patterns = st.lists(st.sampled_from(PIECES), max_size=8).map("".join) | st.text(
    alphabet="abk.*+?()[]{}|^$\\-,1?:PiI<>=", max_size=10)
TOPIC_NAMES = st.lists(st.text(alphabet="abfokKsSiI019._-", min_size=1, max_size=6), max_size=8).map(
    lambda names: ["foo", "FOO", "bar", "k", "ks", "S", "i", *names])


def python_compile(regex: str):
    """The reference's pattern, or its refusal's message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # re's FutureWarnings on nested sets
        try:
            return compile_regex(regex)
        except InvalidRegularExpression as error:
            return str(error)


@PARITY
@given(regex=patterns, names=TOPIC_NAMES)
def test_regex_compiles_and_matches_as_the_reference(regex, names) -> None:
    module = cores.native_module("consumer_group")
    if "\\N" in regex:
        return  # test_native_core_refuses_unicode_names
    expected = python_compile(regex)
    try:
        got = module.regex_fullmatch(regex, names)
    except module.InvalidRegularExpression as error:
        assert str(error) == expected
        return
    assert not isinstance(expected, str), expected
    assert got == [expected.fullmatch(name) is not None for name in names]


@pytest.mark.parametrize("regex", [
    "foo.*", "(?i)FOO|b.r", "[a-f]+", "(?i)[J-L]s", "(?i)\u212as", "(?i:\u017f)", "(?i)\u0131", "(?a)(?i)\u212a",
    "(?P<x>o)(?P=x)", "(?i)(?P<x>[a-z])(?P=x)", "(?x) f o # comment\n o", "(?:)*foo", "(){3}foo", "\\bfoo\\b",
    "foo$", "^foo\\z", "f{,2}oo", "x{", "[]a]+", "[^]a]+",
])
def test_regexes_users_write_match_as_the_reference(regex) -> None:
    module = cores.native_module("consumer_group")
    names = ["foo", "FOO", "fo", "ffoo", "foofoo", "oo", "ks", "KS", "ss", "Is", "x{", "]a", "bar", "k"]
    expected = python_compile(regex)
    assert module.regex_fullmatch(regex, names) == [expected.fullmatch(name) is not None for name in names]


def test_native_core_refuses_unicode_names() -> None:
    """The one construct not ported (docs/native.md): `\\N{name}`, which needs Unicode's name table."""
    module = cores.native_module("consumer_group")
    with pytest.raises(module.InvalidRegularExpression, match="Unicode character names are not evaluated"):
        module.regex_fullmatch("\\N{LATIN SMALL LETTER A}", ["a"])


@pytest.mark.parametrize("regex", ["a{4294967295}", "(?a)(?u)x", "(" * 2000 + ")" * 2000])
def test_reference_refuses_what_re_raises_other_errors_for(regex) -> None:
    with pytest.raises(InvalidRegularExpression):
        compile_regex(regex)


REGEX_POOL = st.sampled_from(["", "f.*", "b.*", "(?i)FOO", "a)", "[x"])
resolved_maps = st.dictionaries(REGEX_POOL.filter(bool), st.builds(
    ResolvedRegularExpression, st.lists(st.sampled_from(["foo", "bar"]), max_size=2).map(tuple),
    st.integers(0, 3), st.integers(0, 40_000)), max_size=3)


@PARITY
@given(old=REGEX_POOL, new=REGEX_POOL, subscribed=st.dictionaries(REGEX_POOL.filter(bool), st.integers(1, 2),
                                                                    max_size=3),
       resolved=resolved_maps, now=st.integers(0, 60_000), interval=st.sampled_from([10_000, 600_000]),
       new_topics_version=st.integers(-1, 4))
def test_maybe_update_regular_expressions_decides_as_the_reference(old, new, subscribed, resolved, now, interval,
                                                                   new_topics_version) -> None:
    module = cores.native_module("consumer_group")
    try:
        status, records, regexes = maybe_update_regular_expressions(
            old_regex=old, new_regex=new, subscribed=subscribed, resolved=resolved, now=now,
            refresh_interval_ms=interval, new_topics_version=new_topics_version)
        expected = (status.name, [r.regex for r in records], None if regexes is None else list(regexes))
    except InvalidRegularExpression as error:
        expected = str(error)
    try:
        got = module.maybe_update_regular_expressions(
            old, new, list(subscribed.items()), [(r, (list(v.topics), v.version, v.timestamp))
                                                 for r, v in resolved.items()], now, interval, new_topics_version)
    except module.InvalidRegularExpression as error:
        got = str(error)
    assert got == expected


@FEWER
@given(regexes=st.lists(REGEX_POOL, max_size=4), names=TOPIC_NAMES, version=st.integers(0, 9),
       now=st.integers(0, 10**6))
def test_resolve_regular_expressions_as_the_reference(regexes, names, version, now) -> None:
    module = cores.native_module("consumer_group")
    expected = [(r, (list(v.topics), v.version, v.timestamp))
                for r, v in resolve_regular_expressions(regexes, names, version, now).items()]
    assert module.resolve_regular_expressions(regexes, names, version, now) == expected


@FEWER
@given(image=st.dictionaries(st.sampled_from(["foo", "bar", "é", "b-1"]), st.tuples(
    st.builds(TopicId, st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1)), st.integers(1, 100))),
       names=st.lists(st.sampled_from(["foo", "bar", "é", "b-1", "gone"]), max_size=5))
def test_metadata_hash_as_the_reference(image, names) -> None:
    module = cores.native_module("consumer_group")
    native_image = {name: (tuple(topic_id), count) for name, (topic_id, count) in image.items()}
    assert module.metadata_hash(native_image, names) == TopicsImage(image).metadata_hash(names)
