"""The Docker-free layer build: the installer's flags and the cache (no network needed here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from infra import layer
from infra.layer import LayerTarget, build_layer, install_command

ARM = LayerTarget("arm64", "3.13")


@pytest.mark.parametrize("uv", [True, False], ids=["uv", "pip"])
def test_install_command_pins_platform_python_and_binary_wheels(monkeypatch, tmp_path, uv):
    if not uv:
        monkeypatch.setattr(layer, "_uv_binary", lambda: None)
    command = install_command(ARM, Path("layers/requirements.txt"), tmp_path / "python")
    text = " ".join(command)
    platform = "aarch64-manylinux2014" if uv else "manylinux2014_aarch64"
    assert platform in command
    assert "--python-version 3.13" in text
    assert "--only-binary :all:" in text or "--only-binary=:all:" in command
    assert "--no-deps" in command and "--require-hashes" in command  # exactly the pinned wheels
    assert f"--target {tmp_path / 'python'}" in text
    if not uv:
        assert command[:3] == [sys.executable, "-m", "pip"]


def test_cache_key_changes_with_everything_that_changes_the_wheels():
    pins = b"pynacl==1.6.2 --hash=sha256:00\n"
    keys = {
        ARM.cache_key(pins),
        LayerTarget("x86_64", "3.13").cache_key(pins),
        LayerTarget("arm64", "3.12").cache_key(pins),
        ARM.cache_key(pins + b"httpx==0.28.1\n"),
    }
    assert len(keys) == 4
    assert ARM.cache_key(pins) == ARM.cache_key(pins)


def test_a_cached_build_is_reused_without_running_the_installer(tmp_path, monkeypatch):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# nothing to install\n")
    cached = tmp_path / "cache" / ARM.cache_key(requirements.read_bytes())
    (cached / "python").mkdir(parents=True)
    (cached / "python" / "marker.py").write_text("")
    # An installer that cannot run: reaching it would raise.
    monkeypatch.setattr(layer, "install_command", lambda *a: [str(tmp_path / "no-such-installer")])
    assert build_layer(ARM, requirements, tmp_path / "cache") == cached


def test_a_failed_install_leaves_no_half_built_cache_entry(tmp_path, monkeypatch):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# nothing\n")
    monkeypatch.setattr(layer, "install_command", lambda *a: [sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(Exception):
        build_layer(ARM, requirements, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []
