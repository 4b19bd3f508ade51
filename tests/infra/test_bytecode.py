"""The code asset and the layer ship bytecode for the configured Python: every module has its
``__pycache__`` file, compiled by that Python (its ``importlib.util.MAGIC_NUMBER``), as a
checked-hash pyc (valid whatever the zip's file dates), recording the deployed paths."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest

from infra.bytecode import magic_number
from infra.settings import StackConfig

CHECKED_HASH = 0b11  # PEP 552 flags: hash-based, check the source


def _configured_version(synth) -> str:
    [runtime] = {f["Properties"]["Runtime"] for f in synth.of_type("AWS::Lambda::Function").values()}
    return runtime.removeprefix("python")


def _code_asset(synth) -> Path:
    [key] = {f["Properties"]["Code"]["S3Key"] for f in synth.of_type("AWS::Lambda::Function").values()}
    return synth.asset_dir(key)


def _layer(synth) -> Path:
    [layer] = synth.of_type("AWS::Lambda::LayerVersion").values()
    return synth.asset_dir(layer["Properties"]["Content"]["S3Key"]) / "python"


def _pyc_for(source: Path, version: str) -> Path:
    return source.parent / "__pycache__" / f"{source.stem}.cpython-{version.replace('.', '')}.pyc"


def test_the_synth_is_for_the_default_python_version(synth):
    assert _configured_version(synth) == StackConfig().python_version


@pytest.mark.parametrize("asset, deployed_at", [(_code_asset, "/var/task"), (_layer, "/opt/python")])
def test_shipped_bytecode_matches_the_configured_python_version(synth, asset, deployed_at):
    version = _configured_version(synth)
    magic = magic_number(version)
    folder = asset(synth)
    sources = [p for p in folder.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(sources) > 20
    missing = [s for s in sources if not _pyc_for(s, version).is_file()]
    assert missing == []
    for source in sources:
        header = _pyc_for(source, version).read_bytes()[:16]
        assert header[:4] == magic, source
        assert int.from_bytes(header[4:8], "little") == CHECKED_HASH, source
    handler = folder / "memorybot" / "handlers" / "interactions.py"
    if handler.exists():  # the code asset: tracebacks name the deployed file
        code = marshal.loads(_pyc_for(handler, version).read_bytes()[16:])
        assert code.co_filename == f"{deployed_at}/memorybot/handlers/interactions.py"
    assert not [p for p in folder.rglob("*.pyc") if p.name.split(".")[-2] != f"cpython-{version.replace('.', '')}"]
