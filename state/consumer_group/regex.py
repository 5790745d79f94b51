"""Regular-expression subscriptions of the consumer protocol (KIP-848's SubscribedTopicRegex): the RE2J syntax
check a new regex gets (Kafka's Utils.throwIfRegularExpressionIsInvalid), its resolution against the topics
the coordinator knows (TopicRegexResolver.resolveRegularExpressions), and when a heartbeat asks for one
(GroupMetadataManager.maybeUpdateRegularExpressions), trunk.

RE2J is stood in for by Python's `re`, whose syntax agrees with RE2J's on what topic-name patterns use
(literals, `.`, classes, `|`, groups, the quantifiers, `^`/`$`, `(?i)`, `(?:`, `(?P<name>`). Where they differ:
* constructs RE2J refuses are refused here too, as INVALID_REGULAR_EXPRESSION, although Python accepts them:
  backreferences (`\\1`..`\\9`; RE2J reads `\\12` as an octal escape, refused here all the same), lookarounds
  (`(?=`, `(?!`, `(?<=`, `(?<!`), atomic groups `(?>`, conditionals `(?(`, comments `(?#`, possessive
  quantifiers (`*+`, `++`, `?+`, `}+`: RE2J's "bad repetition operator") and `\\Z`;
* constructs RE2J accepts that Python does not are refused (INVALID_REGULAR_EXPRESSION, the message saying the
  simulator lacks them): Unicode classes `\\p{..}`/`\\pL`, `\\Q..\\E`, POSIX classes `[[:alpha:]]` and
  `(?<name>`; `\\z` (end of text) is translated to Python's `\\Z`.
A topic matches when the whole name does (RE2J's `matches()`: Python's `fullmatch`).

Kafka resolves on a background executor and writes the result in a later write. Here the resolution is
computed when asked and written as its own append right after the heartbeat's, at the same simulated ms
(state/consumer_group/manager.py): there is never a resolution in flight (Kafka's `executor.isScheduled`).
Every topic of the coordinator's metadata image counts, internal ones included, as TopicRegexResolver does
(no authorizer: nothing is filtered out).
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from typing import Iterable, Mapping

from state.consumer_group.records import ConsumerGroupRegularExpression, ConsumerGroupRecord, ResolvedRegularExpression

# GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: the regexes of a group are refreshed at most this
# often, whatever asks for it.
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000
# GroupCoordinatorConfig: group.consumer.regex.refresh.interval.ms, default 10 minutes, at least 10 s.
REGEX_REFRESH_INTERVAL_MS_DEFAULT = 10 * 60 * 1000
REGEX_REFRESH_INTERVAL_MS_MIN = 10 * 1000
# ConsumerGroup.lastResolvedRegularExpressionRefreshTimeMs of a group with no resolved regex: Long.MIN_VALUE.
NEVER = -(1 << 63)

_REFUSED_GROUPS = {"(?=": "lookahead", "(?!": "negative lookahead", "(?<=": "lookbehind",
                   "(?<!": "negative lookbehind", "(?>": "atomic group", "(?(": "conditional", "(?#": "comment"}


class InvalidRegularExpression(ValueError):
    """A regex RE2J would not compile (or this simulator cannot evaluate): Kafka's InvalidRegularExpression."""


def _refuse(regex: str, why: str) -> InvalidRegularExpression:
    return InvalidRegularExpression(f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {why}.")


def compile_regex(regex: str) -> re.Pattern:
    """The regex as a Python pattern, or InvalidRegularExpression where RE2J would refuse it (or the
    simulator cannot evaluate it): see the module's notes."""
    out, i, in_class = [], 0, False
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            nxt = regex[i + 1:i + 2]
            if nxt == "":
                raise _refuse(regex, "trailing backslash at end of expression")
            if nxt in "123456789":
                raise _refuse(regex, f"invalid escape sequence: `\\{nxt}` (backreferences are not supported)")
            if nxt == "Z":
                raise _refuse(regex, "invalid escape sequence: `\\Z`")
            if nxt in "pPQE":
                raise _refuse(regex, f"`\\{nxt}` is RE2J syntax this simulator does not evaluate")
            out.append("\\Z" if nxt == "z" else c + nxt)
            i += 2
            continue
        if in_class:
            if regex.startswith("[:", i):
                raise _refuse(regex, "POSIX character classes are RE2J syntax this simulator does not evaluate")
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            # A `]` right after `[` or `[^` is a literal.
            j = i + 1 + (regex[i + 1:i + 2] == "^")
            if regex[j:j + 1] == "]":
                out.append(regex[i:j + 1])
                i = j + 1
                continue
        elif c == "(":
            for prefix, name in _REFUSED_GROUPS.items():
                if regex.startswith(prefix, i):
                    raise _refuse(regex, f"invalid or unsupported Perl syntax: `{prefix}` ({name})")
            if regex.startswith("(?<", i):
                raise _refuse(regex, "`(?<name>` is RE2J syntax this simulator does not evaluate (use `(?P<name>`)")
        elif c in "*+?}" and regex[i + 1:i + 2] == "+":
            raise _refuse(regex, f"bad repetition operator: `{c}+`")
        out.append(c)
        i += 1
    try:
        return re.compile("".join(out))
    except (re.error, OverflowError, ValueError, RecursionError) as error:
        # re raises more than re.error: a repetition count of 2^32 - 1 or more (OverflowError), both `(?a)`
        # and `(?u)` (ValueError), groups nested past the interpreter's recursion limit (RecursionError).
        raise _refuse(regex, str(error)) from None


def throw_if_regular_expression_is_invalid(regex: str) -> None:
    """Utils.throwIfRegularExpressionIsInvalid."""
    compile_regex(regex)


def resolve_regular_expressions(regexes: Iterable[str], topic_names: Iterable[str], version: int,
                                now: int) -> dict[str, ResolvedRegularExpression]:
    """TopicRegexResolver.resolveRegularExpressions: each regex with the topics whose whole name it matches,
    stamped with the image version and the time. A regex that does not compile (never: they are checked
    when a member brings them) matches nothing, as Kafka logs and ignores it."""
    names = sorted(topic_names)
    resolved = {}
    for regex in regexes:
        try:
            pattern = compile_regex(regex)
        except InvalidRegularExpression:
            pattern = None
        topics = () if pattern is None else tuple(name for name in names if pattern.fullmatch(name))
        resolved[regex] = ResolvedRegularExpression(topics, version, now)
    return resolved


class RegexUpdate(enum.Enum):
    """GroupMetadataManager.UpdateRegularExpressionStatus."""

    NO_CHANGE = "no_change"
    UPDATED = "updated"  # the member's regex changed; not resolved yet: no epoch bump now
    UPDATED_AND_RESOLVED = "updated_and_resolved"  # changed to a resolved regex (or to none): bump

    @property
    def regex_updated(self) -> bool:
        return self is not RegexUpdate.NO_CHANGE


def maybe_update_regular_expressions(
    *, old_regex: str, new_regex: str, subscribed: Mapping[str, int], resolved: Mapping[str, ResolvedRegularExpression],
    now: int, refresh_interval_ms: int, new_topics_version: int,
) -> tuple[RegexUpdate, list[ConsumerGroupRecord], tuple[str, ...] | None]:
    """maybeUpdateRegularExpressions for a member changing its regex from `old_regex` to `new_regex` ("" for
    none) in a group whose members subscribe to `subscribed` (regex -> members) and which resolved
    `resolved`. Returns the status, the records (the tombstone of a regex its last member leaves) and the
    regexes to resolve now (None: no refresh). Raises InvalidRegularExpression for a new, invalid regex.

    A refresh happens at most every REGEX_BATCH_REFRESH_MIN_INTERVAL_MS (counted from the last resolution),
    and then only if a regex is unresolved, a topic was created since the last resolution (image version), or
    the last one is older than group.consumer.regex.refresh.interval.ms."""
    records: list[ConsumerGroupRecord] = []
    status, require_refresh = RegexUpdate.NO_CHANGE, False
    if old_regex != new_regex:
        status = RegexUpdate.UPDATED
        if old_regex and subscribed.get(old_regex, 0) == 1:
            records.append(ConsumerGroupRegularExpression(old_regex, None))
        if new_regex:
            if subscribed.get(new_regex, 0) == 0:
                throw_if_regular_expression_is_invalid(new_regex)
                require_refresh = True
            elif new_regex in resolved:
                status = RegexUpdate.UPDATED_AND_RESOLVED
        elif old_regex:
            status = RegexUpdate.UPDATED_AND_RESOLVED
    if not require_refresh and not subscribed:
        return status, records, None
    last_refresh = last_refresh_time_ms(resolved)
    if now <= last_refresh + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
        return status, records, None
    counts = Counter(subscribed)
    if old_regex:
        counts[old_regex] -= 1
    if new_regex:
        counts[new_regex] += 1
    regexes = [regex for regex, count in counts.items() if count > 0]
    require_refresh |= len(regexes) != len(resolved)
    require_refresh |= last_version(resolved) < new_topics_version
    require_refresh |= now > last_refresh + refresh_interval_ms
    if require_refresh and regexes:
        return status, records, tuple(sorted(regexes))
    return status, records, None


def last_refresh_time_ms(resolved: Mapping[str, ResolvedRegularExpression]) -> int:
    """lastResolvedRegularExpressionRefreshTimeMs: the first one's (they are resolved together)."""
    return next(iter(resolved.values())).timestamp if resolved else NEVER


def last_version(resolved: Mapping[str, ResolvedRegularExpression]) -> int:
    """lastResolvedRegularExpressionVersion: the first one's, 0 with none."""
    return next(iter(resolved.values())).version if resolved else 0
