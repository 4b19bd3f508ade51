"""moto's DynamoDB server on loopback, for the local stack and the tests (behind moto_store's layer)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from .. import tables

LOCAL_REGION = "us-east-1"
# moto accepts any credentials; fixed ones keep a developer's real profile out of it.
LOCAL_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}


@dataclass
class MotoDynamo:
    endpoint: str
    server: Any = None

    def client(self) -> Any:
        import boto3

        return boto3.client("dynamodb", endpoint_url=self.endpoint, region_name=LOCAL_REGION, **LOCAL_CREDENTIALS)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def start(host: str = "127.0.0.1", port: int = 0) -> MotoDynamo:
    """Start moto's server in this process (port 0: any free port), its transactions atomic and
    isolated (moto_store)."""
    from moto.server import ThreadedMotoServer

    from . import moto_store

    moto_store.install()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request lines: one per request
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    bound_host, bound_port = server.get_host_and_port()
    return MotoDynamo(f"http://{bound_host}:{bound_port}", server)


def use_local_environment(endpoint: str) -> None:
    """Point every boto3 DynamoDB client this process builds at ``endpoint``."""
    os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = endpoint
    os.environ.setdefault("AWS_DEFAULT_REGION", LOCAL_REGION)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", LOCAL_CREDENTIALS["aws_access_key_id"])
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", LOCAL_CREDENTIALS["aws_secret_access_key"])


def create_tables(client: Any, prefix: str = "") -> dict[str, str]:
    """Create every table under ``prefix``; returns logical name -> physical name."""
    names = {spec.logical_name: f"{prefix}{spec.logical_name}" for spec in tables.ALL_TABLES}
    tables.create_tables(client, names)
    return names
