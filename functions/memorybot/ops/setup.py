"""What an operator command needs from its environment before it can do anything (an AWS region
and credentials, a secret, the network), and the one line that says how to fix what is missing.

The operator commands (``memorybot doctor``, ``register-commands``, ``rollback``, ``erase``,
``import``, ``nightly``) exit with ``SETUP_FAILED`` and that line, never a traceback, when the
environment stopped them before the stack or Discord could answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

SETUP_FAILED = 2  # the operator's environment stopped the command: one line says the fix

REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")


def resolve_region(given: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """``--region``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION`` (None: the profile's, if any)."""
    env = os.environ if env is None else env
    return given or next((env[name] for name in REGION_VARIABLES if env.get(name)), None)


def use_region(given: str | None) -> str | None:
    """Resolve the region and hand it to every boto3 client this process builds (boto3 itself
    reads only ``AWS_DEFAULT_REGION``, not the ``AWS_REGION`` the docs export)."""
    region = resolve_region(given)
    if region:
        os.environ["AWS_DEFAULT_REGION"] = region
    return region


def aws_problem(exc: BaseException, *, region: str | None, reading: str = "") -> str | None:
    """The one line for an AWS failure of the environment (None: not one of those). ``reading``
    names what was being read (e.g. a secret's name), for the lines that concern it."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ProfileNotFound,
    )

    cause = exc
    # Powertools Parameters wraps the client's error in its own (GetParameterError): the cause says.
    if type(exc).__name__ == "GetParameterError" and exc.__context__ is not None:
        cause = exc.__context__
    where = f" in {region}" if region else ""
    if isinstance(cause, NoRegionError):
        return "No AWS region: pass --region REGION or export AWS_REGION=REGION (e.g. us-east-1)."
    if isinstance(cause, NoCredentialsError | PartialCredentialsError):
        return (
            "No AWS credentials: configure them (aws configure, or export AWS_PROFILE=NAME) and check them "
            "with aws sts get-caller-identity."
        )
    if isinstance(cause, ProfileNotFound):
        return f"{cause}: name a profile from ~/.aws/config (--profile or AWS_PROFILE)."
    if isinstance(cause, EndpointConnectionError):
        return f"Cannot reach AWS{where} ({cause.kwargs.get('endpoint_url', 'its endpoint')}): check the network."
    if isinstance(cause, ClientError):
        code = cause.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException" and reading:
            return f"{reading} does not exist{where}: check its name and the region (--region or AWS_REGION)."
        if code in ("AccessDeniedException", "AccessDenied", "UnrecognizedClientException"):
            subject = f"read {reading}" if reading else "make this request"
            return f"AWS refused to {subject}{where} ({code}): check the credentials' account and permissions."
        if code in ("ExpiredTokenException", "ExpiredToken", "InvalidClientTokenId"):
            return f"The AWS credentials are not valid ({code}): refresh them (aws sso login, or aws configure)."
    return None
