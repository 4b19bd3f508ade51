"""Fixtures for the CDK app's tests: one real synth per session, shared by every test.

The synth is the operator's ``cdk synth`` (the CLI pinned in package.json) when Node is
present, else the cdk.json ``app`` command run the way the CLI runs it. Either way the
dependency layer is really bundled (cached under build/layer), with no Docker and no
AWS credentials.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# jsii needs a writable HOME; never touch AWS for real.
if not os.access(os.path.expanduser("~"), os.W_OK):
    os.environ["HOME"] = tempfile.mkdtemp(prefix="jsii-home-")
# No credentials reach the synth, and nothing waits on the instance metadata service.
OFFLINE_ENV = {
    "AWS_EC2_METADATA_DISABLED": "true",
    "CDK_DISABLE_VERSION_CHECK": "1",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "18,20",
}
for _key, _value in OFFLINE_ENV.items():
    os.environ.setdefault(_key, _value)

STACK_NAME = "MemoryBot"
CDK_CLI = ROOT / "node_modules" / ".bin" / "cdk"


@dataclass
class Synth:
    outdir: Path
    template: dict
    via: str  # "cdk-cli" or "app-command"

    @property
    def resources(self) -> dict:
        return self.template["Resources"]

    def of_type(self, cfn_type: str) -> dict[str, dict]:
        return {k: v for k, v in self.resources.items() if v["Type"] == cfn_type}

    def asset_dir(self, s3_key: str) -> Path:
        """The staged folder of a file asset, from its S3 key in the template."""
        manifest = json.loads((self.outdir / f"{STACK_NAME}.assets.json").read_text())
        asset_hash = s3_key.removesuffix(".zip")
        return self.outdir / manifest["files"][asset_hash]["source"]["path"]


def _subprocess_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(OFFLINE_ENV)
    # cdk.json runs "python3": make that the interpreter running the tests.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _cdk_cli() -> Path | None:
    if not shutil.which("node"):
        return None
    if not CDK_CLI.exists() and shutil.which("npm"):
        # The pinned CLI from package-lock.json; the npm registry is the only network use.
        # If it cannot be installed, the app command below still gives a real synth.
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=ROOT, capture_output=True, timeout=300)
    return CDK_CLI if CDK_CLI.exists() else None


def _synthesize(outdir: Path) -> str:
    """Synthesize the app into ``outdir``; returns how ("cdk-cli" or "app-command")."""
    env = _subprocess_env()
    cli = _cdk_cli()
    if cli:
        command, via = [str(cli), "synth", "--no-notices", "--quiet", "--output", str(outdir)], "cdk-cli"
    else:
        app_command = json.loads((ROOT / "cdk.json").read_text())["app"]
        command, via = app_command.split(), "app-command"
        env["CDK_OUTDIR"] = str(outdir)
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"synth failed via {via}:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    return via


def shared_by_workers(tmp_path_factory, name: str, build: Callable[[Path], str]) -> tuple[Path, str]:
    """(folder, what ``build`` returned), built once per test run.

    With parallel workers (pytest-xdist) each worker has its own session, so a session fixture
    would run once per worker: the first worker to ask builds into a folder of the run's shared
    temporary root, under a lock, and the others wait for it and read it (the synth is the
    suite's most expensive fixture)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        outdir = tmp_path_factory.mktemp(name)
        return outdir, build(outdir)
    root = tmp_path_factory.getbasetemp().parent  # shared by the run's workers
    outdir, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even if the build failed
        if not done.exists():
            shutil.rmtree(outdir, ignore_errors=True)
            outdir.mkdir()
            done.write_text(build(outdir))
    return outdir, done.read_text()


@pytest.fixture(scope="session")
def synth(tmp_path_factory) -> Synth:
    outdir, via = shared_by_workers(tmp_path_factory, "cdk.out", _synthesize)
    template = json.loads((outdir / f"{STACK_NAME}.template.json").read_text())
    return Synth(outdir=outdir, template=template, via=via)


@pytest.fixture(scope="session")
def app_and_stack():
    """The same app built in-process (not synthesized): for checks on the construct tree."""
    from infra.app import build_app

    return build_app(outdir=tempfile.mkdtemp(prefix="cdk-tree-"))


@pytest.fixture(scope="session")
def encrypted_template() -> dict:
    """The stack with encrypt_personal_data on, synthesized in-process with both nag packs
    (bundling skipped: the assets are not what this synth is about)."""
    from aws_cdk.assertions import Template

    from infra.app import build_app

    app, stack = build_app(
        outdir=tempfile.mkdtemp(prefix="cdk-encrypted-"),
        context={"encrypt_personal_data": "true", "aws:cdk:bundling-stacks": []},
        builtin_cloud_formation_validation=False,
    )
    app.synth()  # raises if either nag pack finds anything unacknowledged
    return Template.from_stack(stack).to_json()
