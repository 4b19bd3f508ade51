"""Fixtures for the CDK app's tests: one real synth per shape and session, shared by every test.

The shapes are environment-agnostic (``synth``) and concrete in two regions, as ``cdk deploy``
makes it (``synth_of``). The synth is the operator's ``cdk synth`` (the CLI pinned in
package.json) when Node is present, else the cdk.json ``app`` command run the way the CLI runs it. Either way the
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

from synth_shapes import CDK_CLI, CONCRETE_ACCOUNT

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


@dataclass
class Synth:
    outdir: Path
    template: dict
    via: str  # "cdk-cli" or "app-command"
    region: str | None = None  # None: environment-agnostic; else the concrete account in this region

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
    # No AWS settings and no CDK environment leak in: the default synth is environment-agnostic.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_DEFAULT_"))}
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


def _synthesize(outdir: Path, region: str | None = None) -> Synth:
    """One real synth, through the CDK CLI when it is installed, else the cdk.json app command.

    With a region, the environment is concrete as `cdk deploy` makes it: the operator exports
    AWS_REGION (README, Deploy) and the CLI resolves the account from the credentials and hands
    both to the app as CDK_DEFAULT_ACCOUNT/CDK_DEFAULT_REGION. There are no credentials here, so
    the account is given the way the CLI passes it on (it keeps a CDK_DEFAULT_ACCOUNT it could
    not resolve itself); the region goes in as the operator sets it.
    """
    env = _subprocess_env()
    if region:
        env.update(AWS_REGION=region, CDK_DEFAULT_ACCOUNT=CONCRETE_ACCOUNT)
    cli = _cdk_cli()
    if cli:
        command, via = [str(cli), "synth", "--no-notices", "--quiet", "--output", str(outdir)], "cdk-cli"
    else:
        app_command = json.loads((ROOT / "cdk.json").read_text())["app"]
        command, via = app_command.split(), "app-command"
        env["CDK_OUTDIR"] = str(outdir)
        if region:
            env["CDK_DEFAULT_REGION"] = region  # what the CLI would have set from AWS_REGION
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    shape = region or "agnostic"
    assert result.returncode == 0, f"{shape} synth failed via {via}:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    template = json.loads((outdir / f"{STACK_NAME}.template.json").read_text())
    return Synth(outdir=outdir, template=template, via=via, region=region)


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


def _synth_once(tmp_path_factory, region: str | None = None) -> Synth:
    """``_synthesize`` once per test run, whichever worker asks first."""
    name = f"cdk.out-{region}" if region else "cdk.out"
    outdir, via = shared_by_workers(tmp_path_factory, name, lambda out: _synthesize(out, region).via)
    template = json.loads((outdir / f"{STACK_NAME}.template.json").read_text())
    return Synth(outdir=outdir, template=template, via=via, region=region)


@pytest.fixture(scope="session")
def synth(tmp_path_factory) -> Synth:
    """The environment-agnostic synth (a plain `cdk synth` without credentials)."""
    return _synth_once(tmp_path_factory)


@pytest.fixture(scope="session")
def synth_of(tmp_path_factory, synth) -> Callable[[str], Synth]:
    """Synth of a shape ("agnostic" or a region for a concrete environment), each made once per session."""
    made: dict[str, Synth] = {"agnostic": synth}

    def of(shape: str) -> Synth:
        if shape not in made:
            made[shape] = _synth_once(tmp_path_factory, region=shape)
        return made[shape]

    return of


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
