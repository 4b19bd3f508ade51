"""The dependency layer, built without Docker.

Wheels are installed with uv (or pip when uv is missing) for the Lambda's exact
platform and Python version, binary wheels only, from the hash-pinned
``layers/requirements.txt``. The result is cached under ``build/layer/<key>``,
the key being a hash of everything that decides the layer's content, so a
repeated synth copies a folder instead of reaching the package index.

Regenerate the pins after editing ``layers/requirements.in``::

    uv pip compile layers/requirements.in --python-version 3.13 \\
        --python-platform aarch64-manylinux2014 --only-binary :all: --generate-hashes \\
        --no-header --no-annotate -o layers/requirements.txt \\
        --no-emit-package boto3 --no-emit-package botocore --no-emit-package s3transfer \\
        --no-emit-package urllib3 \\
        --no-emit-package python-dateutil --no-emit-package six
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from .bytecode import compile_tree

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "layers" / "requirements.txt"
CACHE_DIR = ROOT / "build" / "layer"
# Bump when the build steps below change in a way that changes the output.
RECIPE_VERSION = "3"  # 3: bytecode compiled for the target Python

# Files a running function never needs: scripts, type stubs, the installer's lock file.
_PRUNE = ("bin", "wrapt-stubs", ".lock")


@dataclass(frozen=True)
class LayerTarget:
    """What the wheels must match: the functions' architecture and Python version."""

    architecture: str  # "arm64" or "x86_64" (Lambda's names)
    python_version: str  # "3.13"

    @property
    def machine(self) -> str:
        return {"arm64": "aarch64", "x86_64": "x86_64"}[self.architecture]

    def uv_platform(self) -> str:
        return f"{self.machine}-manylinux2014"

    def pip_platform(self) -> str:
        return f"manylinux2014_{self.machine}"

    def cache_key(self, requirements: bytes) -> str:
        digest = hashlib.sha256()
        for part in (RECIPE_VERSION, self.architecture, self.python_version):
            digest.update(part.encode() + b"\0")
        digest.update(requirements)
        return digest.hexdigest()[:32]


def _uv_binary() -> str | None:
    try:
        from uv import find_uv_bin  # the uv wheel ships its binary

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def install_command(target: LayerTarget, requirements: Path, out: Path) -> list[str]:
    """The installer invocation: binary wheels for the target, no dependency resolution at build time."""
    uv = _uv_binary()
    if uv:
        return [
            uv, "pip", "install", "--quiet", "--no-config",
            "--target", str(out),
            "--python-platform", target.uv_platform(),
            "--python-version", target.python_version,
            "--only-binary", ":all:", "--no-deps", "--require-hashes", "--no-compile-bytecode",
            "-r", str(requirements),
        ]  # fmt: skip
    return [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--target", str(out),
        "--platform", target.pip_platform(),
        "--implementation", "cp",
        "--python-version", target.python_version,
        "--only-binary=:all:", "--no-deps", "--require-hashes", "--no-compile",
        "-r", str(requirements),
    ]  # fmt: skip


def build_layer(target: LayerTarget, requirements: Path = REQUIREMENTS, cache_dir: Path = CACHE_DIR) -> Path:
    """Return a folder holding ``python/`` with the layer's packages, building it if not cached."""
    key = target.cache_key(requirements.read_bytes())
    done = cache_dir / key
    if (done / "python").is_dir():
        return done
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=cache_dir))
    try:
        site = work / "python"
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        subprocess.run(install_command(target, requirements, site), check=True, env=env)
        for name in _PRUNE:
            path = site / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        for cache in site.rglob("__pycache__"):  # whatever the installer left, for whichever Python
            shutil.rmtree(cache, ignore_errors=True)
        compile_tree(site, target.python_version, "/opt/python")  # the runtime cannot write a cache
        try:
            work.rename(done)  # atomic: a concurrent build either wins or finds ours
        except OSError:
            if not (done / "python").is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return done


@jsii.implements(ILocalBundling)
class LocalLayerBundling:
    """CDK local bundling: fills the asset's output folder from the cached build."""

    def __init__(self, target: LayerTarget, requirements: Path = REQUIREMENTS, cache_dir: Path = CACHE_DIR) -> None:
        self.target = target
        self.requirements = requirements
        self.cache_dir = cache_dir

    def try_bundle(self, output_dir: str, *_options: Any, **_kwargs: Any) -> bool:
        built = build_layer(self.target, self.requirements, self.cache_dir)
        shutil.copytree(built / "python", Path(output_dir) / "python", dirs_exist_ok=True)
        return True


def layer_code(target: LayerTarget, requirements: Path = REQUIREMENTS) -> lambda_.Code:
    """The layer's code asset. Its hash is the cache key, so CDK reuses a staged copy too."""
    key = target.cache_key(requirements.read_bytes())
    return lambda_.Code.from_asset(
        str(requirements.parent),
        asset_hash=key,
        asset_hash_type=AssetHashType.CUSTOM,
        bundling=BundlingOptions(
            # Never pulled: local bundling always succeeds or raises. CDK requires an image.
            image=DockerImage.from_registry(f"public.ecr.aws/sam/build-python{target.python_version}"),
            local=LocalLayerBundling(target, requirements),
        ),
    )
