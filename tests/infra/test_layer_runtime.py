"""The built layer, seen the way the Lambda runtime sees it.

The runtime puts the layer's ``python/`` folder on ``sys.path`` and imports from it with
nothing else installed. We do the same in a fresh interpreter (``-I -S``: no site-packages,
no environment). The deployed layer is for the functions' architecture (arm64), which this
machine may not execute; so its binaries are checked by their ELF headers and file tags, and
the same bundler builds the layer for this machine's architecture, which is then imported
and used for real.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from infra.layer import LayerTarget, build_layer

ELF_MACHINE = {183: "arm64", 62: "x86_64"}
HOST_ARCH = {"aarch64": "arm64", "arm64": "arm64", "x86_64": "x86_64", "amd64": "x86_64"}.get(
    platform.machine().lower()
)

SIGN_AND_VERIFY = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])  # what the runtime does with /opt/python
    import nacl.bindings, nacl.signing, cffi, _cffi_backend
    assert nacl.__file__.startswith(sys.argv[1]), nacl.__file__
    assert _cffi_backend.__file__.startswith(sys.argv[1]), _cffi_backend.__file__
    key = nacl.signing.SigningKey.generate()
    signed = key.sign(b"1700000000" + b'{"type":1}')
    key.verify_key.verify(signed)  # raises BadSignatureError if the binding were broken
    try:
        key.verify_key.verify(b"1700000001" + signed.message[10:], signed.signature)
    except Exception as exc:
        assert type(exc).__name__ == "BadSignatureError"
    else:
        raise AssertionError("a tampered message verified")
    from aws_lambda_powertools import Logger, Metrics  # boto3-free parts; boto3 is the runtime's
    import httpx, jmespath, aws_xray_sdk
    print("ok", sys.version_info[:2])
    """
)


def _elf_arch(path: Path) -> str:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", path
    return ELF_MACHINE.get(int.from_bytes(header[18:20], "little"), "other")


def _deployed_layer(synth) -> Path:
    [layer] = synth.of_type("AWS::Lambda::LayerVersion").values()
    return synth.asset_dir(layer["Properties"]["Content"]["S3Key"]) / "python"


def test_deployed_layer_binaries_match_the_functions_architecture_and_python(synth):
    site = _deployed_layer(synth)
    [function] = {f["Properties"]["Runtime"] for f in synth.of_type("AWS::Lambda::Function").values()}
    version_tag = "cpython-" + function.removeprefix("python").replace(".", "")
    binaries = list(site.rglob("*.so"))
    assert site / "nacl" / "_sodium.abi3.so" in binaries  # PyNaCl's libsodium binding
    for binary in binaries:
        assert _elf_arch(binary) == "arm64", binary
        tag = binary.name.split(".")[-2]
        if tag != "abi3":  # version-specific extensions must be for the runtime's exact version
            assert tag.startswith(version_tag) and "aarch64-linux-gnu" in tag, binary.name
    assert (site / f"_cffi_backend.{version_tag}-aarch64-linux-gnu.so").is_file()


def _interpreter(version: str) -> str | None:
    """An interpreter of ``version`` that really runs (pyenv shims may exist but refuse)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser()
    candidates = [
        shutil.which(f"python{version}"),
        *map(str, sorted(pyenv.glob(f"versions/{version}*/bin/python{version}"))),
    ]
    for candidate in (*candidates, sys.executable):
        if not candidate:
            continue
        probe = subprocess.run(
            [candidate, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


needs_linux = pytest.mark.skipif(
    HOST_ARCH is None or sys.platform != "linux", reason="needs a Linux x86_64 or arm64 machine"
)


@pytest.fixture(scope="module")
def host_layer(synth) -> tuple[str, Path]:
    """(interpreter, layer site folder) runnable on this machine, as close to the runtime as it can be.

    The functions' Python version if this machine has it, else the one running the tests.
    """
    [runtime] = {f["Properties"]["Runtime"] for f in synth.of_type("AWS::Lambda::Function").values()}
    version = runtime.removeprefix("python")
    interpreter = _interpreter(version)
    if interpreter is None:
        version = "{}.{}".format(*sys.version_info[:2])
        interpreter = sys.executable
    if HOST_ARCH == "arm64" and version == runtime.removeprefix("python"):
        return interpreter, _deployed_layer(synth)  # this machine can run the deployed layer itself
    return interpreter, build_layer(LayerTarget(HOST_ARCH, version)) / "python"


@needs_linux
def test_the_bundler_output_imports_pynacl_like_the_runtime_and_verifies_a_signature(host_layer):
    interpreter, site = host_layer
    result = subprocess.run(
        [interpreter, "-I", "-S", "-c", SIGN_AND_VERIFY, str(site)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")


# What the Lambda Python runtime itself provides besides the standard library.
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")

from infra.stack import FUNCTIONS  # noqa: E402

HANDLER_PATHS = sorted({spec.handler for spec in FUNCTIONS})
IMPORT_HANDLERS = textwrap.dedent(
    """
    import importlib, sys
    code, layer, runtime = sys.argv[1:4]
    sys.path[:0] = [code, layer, runtime]  # /var/task, /opt/python, the runtime's boto3
    for path in sys.argv[4:]:  # every FunctionSpec's handler, "memorybot.handlers.<module>.<function>"
        name, _, function = path.rpartition(".")
        module = importlib.import_module(name)
        assert callable(getattr(module, function)), path
        assert module.__file__.startswith(code), module.__file__
    import memorybot.bootstrap, memorybot.adapters.dynamodb_client, memorybot.adapters.discord_rest
    import memorybot.adapters.dynamodb_memories, memorybot.adapters.dynamodb_messages
    import memorybot.adapters.bedrock, memorybot.adapters.invoker
    import aws_lambda_powertools.utilities.idempotency, aws_lambda_powertools.utilities.parameters
    from aws_lambda_powertools import Tracer
    print("ok")
    """
)


@needs_linux
def test_every_handler_imports_from_the_code_asset_and_layer_alone(synth, host_layer, tmp_path):
    """Catches a function importing a package the layer does not carry (the venv would hide it)."""
    import importlib.util

    interpreter, site = host_layer
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    for name in RUNTIME_PACKAGES:
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin)
        source = origin.parent if origin.name == "__init__.py" else origin
        (runtime / source.name).symlink_to(source)
    [key] = {f["Properties"]["Code"]["S3Key"] for f in synth.of_type("AWS::Lambda::Function").values()}
    code = synth.asset_dir(key)
    env = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true"}
    result = subprocess.run(
        [interpreter, "-S", "-c", IMPORT_HANDLERS, str(code), str(site), str(runtime), *HANDLER_PATHS],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().endswith("ok")


ZONE_WITHOUT_A_SYSTEM_DATABASE = textwrap.dedent(
    """
    import sys, zoneinfo
    from datetime import datetime, timezone
    code, layer = sys.argv[1:3]
    sys.path[:0] = [code, layer]
    zoneinfo.reset_tzpath(to=[])  # as on a runtime without /usr/share/zoneinfo
    from memorybot.config import Settings
    zone = Settings.from_env({"MEMORYBOT_TIMEZONE": "Europe/Paris"}).zone
    assert datetime(2026, 7, 1, tzinfo=timezone.utc).astimezone(zone).utcoffset().total_seconds() == 7200
    assert datetime(2026, 12, 1, tzinfo=timezone.utc).astimezone(zone).utcoffset().total_seconds() == 3600
    import tzdata
    assert tzdata.__file__.startswith(layer), tzdata.__file__
    print("ok")
    """
)


@needs_linux
def test_any_time_zone_loads_from_the_layer_without_a_system_database(synth, host_layer):
    """MEMORYBOT_TIMEZONE (stack context timezone) names any IANA zone: the layer carries the
    database (tzdata), so a runtime without one still starts."""
    interpreter, site = host_layer
    [key] = {f["Properties"]["Code"]["S3Key"] for f in synth.of_type("AWS::Lambda::Function").values()}
    result = subprocess.run(
        [interpreter, "-I", "-S", "-c", ZONE_WITHOUT_A_SYSTEM_DATABASE, str(synth.asset_dir(key)), str(site)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip() == "ok"
