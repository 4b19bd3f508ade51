"""The Makefile a newcomer runs first: an old Python is refused before anything is created, and a
.venv whose install never finished is rebuilt rather than patched."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def make(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=checkout, capture_output=True, text=True, timeout=60
    )


def test_an_old_python_is_refused_before_the_venv_is_created(checkout):
    old = checkout / "python3.10"
    # This interpreter, reporting itself as 3.10 to the check's code.
    old.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c "
        '\'import sys; sys.version_info = (3, 10, 12, "final", 0); exec(sys.argv[1])\' "$2"\n'
    )
    old.chmod(0o755)
    refused = make(checkout, "install", f"PYTHON={old}")
    assert refused.returncode != 0
    assert "needs Python 3.11 or newer" in refused.stderr and "is 3.10.12" in refused.stderr
    assert "make PYTHON=python3.12 run" in refused.stderr  # the fix, in the message
    assert not (checkout / ".venv").exists()


def test_a_venv_whose_install_never_finished_is_rebuilt_from_scratch(checkout):
    (checkout / ".venv" / "bin").mkdir(parents=True)  # created, but no stamp: the install failed
    planned = make(checkout, "--dry-run", "install", f"PYTHON={sys.executable}").stdout.splitlines()
    assert "rm -rf .venv" in planned
    assert planned.index("rm -rf .venv") < next(i for i, line in enumerate(planned) if "-m venv .venv" in line)


def test_a_finished_venv_is_updated_in_place_when_the_dependencies_change(checkout):
    (checkout / ".venv").mkdir()
    stamp = checkout / ".venv" / ".installed"
    stamp.touch()
    os.utime(stamp, (0, 0))  # older than pyproject.toml: the dependencies changed since
    planned = make(checkout, "--dry-run", "install", f"PYTHON={sys.executable}").stdout.splitlines()
    assert "rm -rf .venv" not in planned and any("uv pip install" in line for line in planned)


def test_make_run_installs_only_what_running_needs_and_make_test_the_rest(checkout):
    run = make(checkout, "--dry-run", "run", f"PYTHON={sys.executable}").stdout
    [run_install] = [line for line in run.splitlines() if "uv pip install" in line]
    assert "'.[local]'" in run_install  # the runtime and moto's server: no pytest, no CDK
    test = make(checkout, "--dry-run", "test", f"PYTHON={sys.executable}").stdout
    assert any("'.[local,dev,infra]'" in line for line in test.splitlines())

    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[\[<>=]", d)[0] for d in extras["local"]}
    assert "moto" in names and not names & {"pytest", "hypothesis", "mypy", "ruff", "aws-cdk-lib", "cfn-lint"}
    assert not any("server" in d for d in extras["local"])  # moto[server] pulls in every service's dependencies


def test_make_run_takes_a_port_for_a_second_stack(checkout):
    (checkout / ".venv").mkdir()
    (checkout / ".venv" / ".installed-run").touch()  # installed: only the command is planned
    assert make(checkout, "--dry-run", "run").stdout.splitlines() == [".venv/bin/memorybot local"]
    assert make(checkout, "--dry-run", "run", "PORT=8790").stdout.splitlines() == [
        ".venv/bin/memorybot local --port 8790"
    ]


def test_make_test_runs_the_suite_on_parallel_workers_and_ci_runs_it_then_the_thorough_profile(checkout):
    for stamp in (".installed-run", ".installed"):
        (checkout / ".venv").mkdir(exist_ok=True)
        (checkout / ".venv" / stamp).touch()
    [command] = make(checkout, "--dry-run", "test").stdout.splitlines()
    assert command.startswith(".venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile")
    [thorough] = make(checkout, "--dry-run", "test-thorough").stdout.splitlines()
    assert thorough.startswith("HYPOTHESIS_PROFILE=thorough ") and "-m hypothesis" in thorough
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci.index("make test") < ci.index("make test-thorough")
    readme = (ROOT / "README.md").read_text()
    assert "make test " in readme and "make run " in readme  # the commands newcomers are told to type
