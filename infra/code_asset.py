"""The functions' code asset: the ``memorybot`` package, with bytecode for the runtime's Python.

Only the package goes in: no metadata, caches, tests, the local stack (it needs moto) or the
operator tools (the ``memorybot`` command, its doctor). The asset is built by CDK local bundling (no Docker): the
package is copied and compiled with an interpreter of the configured ``python_version``
(``bytecode.py``). Its hash covers the sources, the version and the recipe, so a change to any
of them makes a new asset.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from .bytecode import compile_tree

FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
PACKAGE = "memorybot"
RECIPE_VERSION = "1"  # bump when the steps below change the output
# memorybot/local: the local stack only (it needs moto); memorybot/ops and memorybot/cli.py: run by
# operators and developers from their own machine (no function imports them).
NOT_DEPLOYED = ("local", "ops", "cli.py")
SKIPPED = ("__pycache__", "*.pyc", "*.egg-info", *NOT_DEPLOYED)
DEPLOYED_AT = "/var/task"

# Zipped, with bytecode for the runtime (the sources alone are about a third of it). Raised from
# 300 KiB when the nightly steps, erasure and the data-rights commands arrived, and from 400 KiB
# when relevance selection did (selection, recall, the embedding adapters and the vector codec:
# ~35 KB zipped; the interactions function imports none of it), and to 512 KiB when consent, import,
# the doctor's shared settings and the typed nightly payloads did (the operator's command, cli.py,
# left the asset then), and to 640 KiB when the time-aware memories did (/memory history and its
# Undo with their texts in two languages, dates in prompts, the memory's end and the review of ended
# memories: ~10 KB zipped, which took the package from 510 to 520 KiB, against a goal it was 2 KiB
# under), and kept when every answer came in two languages (the catalog, the localized command
# definitions and "Remember this": about 25 KB zipped more): the package, not strays, is what
# grew (tests/infra/test_checks.py checks that only the package is in the asset); and to 768 KiB
# when a server's own settings did (/memory-settings with its texts in two languages, the servers'
# store, counters and diaries: about 66 KiB zipped, sources and bytecode; 712 KiB with the rest); and
# to 832 KiB when a large profile's selection index did (its codec and the store's upkeep on every
# write path: 780 KiB with it). A zip this size is not what a cold start waits for: the interactions
# function's imports are, and the cold-start benchmark measures them.
CODE_GOAL_BYTES = 832 * 1024
# The dependency layer, zipped: what every function downloads beside its code on a cold start.
LAYER_GOAL_BYTES = 15 * 1024 * 1024


def _sources(root: Path = FUNCTIONS_DIR) -> list[Path]:
    package = root / PACKAGE
    files = []
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package)
        if (
            path.is_dir()
            or relative.parts[0] in NOT_DEPLOYED
            or "__pycache__" in relative.parts
            or path.suffix == ".pyc"
        ):
            continue
        files.append(path)
    return files


def source_hash(python_version: str, root: Path = FUNCTIONS_DIR) -> str:
    digest = hashlib.sha256(f"{RECIPE_VERSION}\0{python_version}\0".encode())
    for path in _sources(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def build_code(output: Path, python_version: str, root: Path = FUNCTIONS_DIR) -> None:
    """Copy the package into ``output`` and compile it for ``python_version``."""
    shutil.copytree(root / PACKAGE, output / PACKAGE, ignore=shutil.ignore_patterns(*SKIPPED), dirs_exist_ok=True)
    compile_tree(output, python_version, DEPLOYED_AT)


def function_code(python_version: str) -> Any:
    """The ``lambda_.Code`` of every function. (CDK is imported here, not at the top: the
    benchmarks build the same asset with ``build_code`` without starting jsii.)"""
    import jsii
    from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
    from aws_cdk import aws_lambda as lambda_

    @jsii.implements(ILocalBundling)
    class LocalCodeBundling:
        def try_bundle(self, output_dir: str, *_options: Any, **_kwargs: Any) -> bool:
            build_code(Path(output_dir), python_version)
            return True

    return lambda_.Code.from_asset(
        str(FUNCTIONS_DIR),
        asset_hash=source_hash(python_version),
        asset_hash_type=AssetHashType.CUSTOM,
        bundling=BundlingOptions(
            # Never pulled: local bundling always succeeds or raises. CDK requires an image.
            image=DockerImage.from_registry(f"public.ecr.aws/sam/build-python{python_version}"),
            local=LocalCodeBundling(),
        ),
    )
