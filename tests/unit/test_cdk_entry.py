"""`npx cdk synth` runs cdk.json's app command, `python3 infra/app.py`, with whatever python3 the shell
finds: outside the venv the CDK libraries are missing, and the answer is one line naming the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_app_command_is_the_one_the_message_speaks_of():
    assert json.loads((ROOT / "cdk.json").read_text())["app"] == "python3 infra/app.py"


def test_without_the_cdk_libraries_the_synth_fails_with_one_line_naming_the_fix():
    # -S: no site-packages, as a python3 outside the venv has no aws-cdk-lib.
    ran = subprocess.run(
        [sys.executable, "-S", "infra/app.py"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert ran.returncode == 1
    assert ran.stdout == ""
    [line] = ran.stderr.splitlines()
    assert "Traceback" not in line and "has no module 'aws_cdk'" in line
    assert "make install && . .venv/bin/activate" in line
