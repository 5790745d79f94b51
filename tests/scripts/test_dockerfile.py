"""The Dockerfile, read rather than built (no container engine here): a base pinned to a Debian release, built
by scripts/setup (the README's install, tested in test_java_runtime.py), and the README's commands for the image
pointing at what the image holds."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = (REPO / "Dockerfile").read_text()
README = (REPO / "README.md").read_text()


def joined(text: str) -> list[str]:
    """The lines of `text`, with backslash-continued lines joined."""
    return re.sub(r"\\\n\s*", " ", text).splitlines()


def instructions(name: str) -> list[str]:
    """The arguments of each `name` instruction."""
    return [line.split(None, 1)[1] for line in joined(DOCKERFILE) if line.startswith(name + " ")]


def copied() -> dict[str, Path]:
    """Image path (relative to WORKDIR) -> repository path, for every COPY."""
    pairs = {}
    for args in instructions("COPY"):
        *sources, target = args.split()
        for source in sources:
            pairs[source if len(sources) > 1 else target.removeprefix("./")] = REPO / source
    return pairs


def test_the_base_names_a_debian_release_that_has_a_java_17_plus_runtime():
    assert instructions("FROM")[-1] in ("python:3.11-slim-bookworm", "python:3.11-slim-trixie")


def test_the_native_engine_is_built_in_a_stage_of_the_same_release_and_its_wheel_installed():
    builder, final = instructions("FROM")
    image, _, stage = builder.partition(" AS ")
    # The same Debian release, so the wheel links against the glibc the image has.
    assert image.startswith("rust:") and image.split("-")[-1] == final.split("-")[-1]
    runs = instructions("RUN")
    assert any("pip wheel --no-deps /build/native" in run for run in runs)
    assert f"--from={stage} /build/wheels /tmp/wheels" in instructions("COPY")
    assert "native /build/native" in instructions("COPY") and (REPO / "native" / "Cargo.toml").is_file()
    assert any("bash scripts/setup" in run and "pip install --no-deps /tmp/wheels/coordsim_native-" in run
               for run in runs)
    assert "native/target" in (REPO / ".dockerignore").read_text().split()


def test_the_image_is_built_by_scripts_setup_with_everything_it_installs():
    assert any("bash scripts/setup" in run for run in instructions("RUN"))
    image = copied()
    for path in ("pyproject.toml", "README.md", "scripts", "state", "streaming", "simulations", "conf"):
        assert path in image and image[path].exists(), path
    workdir, = instructions("WORKDIR")
    env = instructions("ENV")[0]
    assert f"PYSPARK_PYTHON={workdir}/.venv/bin/python" in env and f"PATH={workdir}/.venv/bin:" in env


def test_the_readme_s_image_commands_use_what_the_image_holds():
    workdir, = instructions("WORKDIR")
    commands = [shlex.split(line, comments=True) for line in joined(README) if line.startswith("docker run ")]
    assert commands, "no docker run in README.md"
    image = copied()
    main = next(c for c in commands if "run" in c[c.index("coordsim") + 1:])
    assert main[main.index("-v") + 1].endswith(f":{workdir}/runs")
    assert main[main.index("--out") + 1].startswith("runs/")
    scenario = main[main.index("coordsim") + 2]
    assert scenario.split("/")[0] in image and (REPO / scenario).is_file()
    submit = next(c for c in commands if "spark-submit" in c)
    script = next(arg for arg in submit if arg.endswith(".py"))
    assert script.split("/")[0] in image and (REPO / script).is_file()
