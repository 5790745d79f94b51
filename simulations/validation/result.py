"""The outcome of `coordsim validate`: named checks that passed or failed, and its short text summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Check:
    # "suite" (great-expectations, one per expectation), "invariant" or "input".
    kind: str
    name: str
    passed: bool
    # One line a person can act on; for a failure, what was found and an example.
    detail: str = ""


@dataclass
class ValidationResult:
    run_dir: Path
    checks: list[Check] = field(default_factory=list)
    data_docs: Path | None = None

    @property
    def success(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]

    def summary(self) -> str:
        failed = self.failures
        verdict = "PASSED" if not failed else f"FAILED ({len(failed)} of {len(self.checks)} checks)"
        lines = [f"validate {self.run_dir}: {verdict}"]
        for kind, label in (("suite", "tables"), ("invariant", "invariants"), ("input", "input rows")):
            checks = [c for c in self.checks if c.kind == kind]
            if not checks:
                continue
            bad = [c for c in checks if not c.passed]
            if kind == "input":
                lines += [f"  {'FAIL' if not c.passed else 'ok  '} {label}: {c.detail}" for c in checks]
                continue
            lines.append(f"  {'ok  ' if not bad else 'FAIL'} {label}: {len(checks) - len(bad)} of {len(checks)} passed")
            lines += [f"       {c.name}: {c.detail}" for c in bad]
        if self.data_docs is not None:
            lines.append(f"  data docs: {self.data_docs}")
        return "\n".join(lines)
