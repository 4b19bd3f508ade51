"""Bytecode for the target runtime: the code asset and the layer ship ``__pycache__/*.pyc``.

Lambda's file system is read-only, so a module without a matching ``.pyc`` is compiled from
source on every cold start. The files are compiled by an interpreter of the functions' own
Python version (a ``.pyc`` is only valid for the version whose magic number it carries), as
checked-hash pycs: valid whatever the file times in the zip (CDK zips every file with one
fixed date), never used for a source they were not compiled from. ``PYTHONHASHSEED=0`` and
the stripped build folder make the output reproducible, and the recorded source paths are
the deployed ones (``/var/task``, ``/opt/python``), as tracebacks should show.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


class NoInterpreter(RuntimeError):
    """No Python of the target version on this machine: the bytecode cannot be compiled."""


def target_interpreter(version: str) -> str:
    """An interpreter of ``version`` that really runs (a pyenv shim may exist but refuse)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser()
    candidates = [
        sys.executable,
        shutil.which(f"python{version}"),
        *map(str, sorted(pyenv.glob(f"versions/{version}*/bin/python{version}"))),
    ]
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if Path(uv).exists():
        found = subprocess.run([uv, "python", "find", "--no-project", version], capture_output=True, text=True)
        if found.returncode == 0:
            candidates.append(found.stdout.strip())
    for candidate in candidates:
        if not candidate:
            continue
        probe = subprocess.run(
            [candidate, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    raise NoInterpreter(
        f"Python {version} is needed to compile the functions' bytecode: install it "
        f"(e.g. `uv python install {version}`, or pyenv) or choose another python_version"
    )


def compile_tree(folder: Path, version: str, deployed_as: str) -> None:
    """Compile every ``.py`` under ``folder`` into ``__pycache__`` for Python ``version``."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        [
            target_interpreter(version),
            "-I",
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "checked-hash",
            "-s",
            str(folder),
            "-p",
            deployed_as,
            str(folder),
        ],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def magic_number(version: str) -> bytes:
    """``importlib.util.MAGIC_NUMBER`` of Python ``version``: the first four bytes of its pycs."""
    out = subprocess.run(
        [
            target_interpreter(version),
            "-I",
            "-S",
            "-c",
            "import importlib.util, sys; sys.stdout.write(importlib.util.MAGIC_NUMBER.hex())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return bytes.fromhex(out.stdout)
