"""``ports.ManifestStore``: the nightly plan's manifest (one JSON array of speakers and their
message ids, never text). S3 deployed (the Distributed Map's ItemReader reads the same
object); a folder for the local stack; this process's memory otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _encode(entries: list[dict]) -> bytes:
    return json.dumps(entries, separators=(",", ":"), sort_keys=True).encode("utf-8")


class S3Manifests:
    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self.bucket = bucket

    def write(self, key: str, entries: list[dict]) -> None:
        self._client.put_object(Bucket=self.bucket, Key=key, Body=_encode(entries), ContentType="application/json")

    def read(self, key: str) -> list[dict]:
        return json.loads(self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read())


def s3_client() -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3", config=Config(connect_timeout=2, read_timeout=10, retries={"mode": "standard", "max_attempts": 4})
    )


class FileManifests:
    """The local stack's manifests, under its state folder."""

    def __init__(self, root: Path) -> None:
        self._root = Path(root)

    def _path(self, key: str) -> Path:
        path = (self._root / key).resolve()
        if self._root.resolve() not in path.parents:
            raise ValueError("manifest key outside the manifest folder")
        return path

    def write(self, key: str, entries: list[dict]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_encode(entries))

    def read(self, key: str) -> list[dict]:
        return json.loads(self._path(key).read_bytes())


class InMemoryManifests:
    """Manifests kept in this process: where neither S3 nor a folder is wired (a function run
    outside the deployed stack, the tests). Each read is a JSON copy, as from S3."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}

    def write(self, key: str, entries: list[dict]) -> None:
        self._data[key] = _encode(entries)

    def read(self, key: str) -> list[dict]:
        return json.loads(self._data[key])
