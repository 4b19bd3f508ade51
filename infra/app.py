"""CDK entry point: builds the memorybot stack, with cdk-nag's AWS Solutions and NIST 800-53 rev 5 checks on synth."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Runnable as a script from the repo root (cdk.json), with or without the package installed.
for path in (ROOT, ROOT / "functions"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

try:
    from aws_cdk import App, Environment, Validations
    from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks

    from infra.nag import acknowledge_findings
    from infra.settings import StackConfig
    from infra.stack import MemoryBotStack
except ModuleNotFoundError as missing:  # cdk.json runs `python3`: outside the venv the CDK is not there
    sys.exit(
        f"infra/app.py: {sys.executable} has no module {missing.name!r}. Install and activate the venv "
        "first: make install && . .venv/bin/activate (then run npx cdk ... again)"
    )


def build_app(outdir: str | None = None, context: dict | None = None, **app_options) -> tuple[App, MemoryBotStack]:
    app = App(outdir=outdir, context=context, **app_options)
    config = StackConfig.from_context(app.node.try_get_context)
    # Environment-agnostic unless the CLI knows the account (synth needs no credentials).
    account, region = os.environ.get("CDK_DEFAULT_ACCOUNT"), os.environ.get("CDK_DEFAULT_REGION")
    env = Environment(account=account, region=region) if account and region else None
    stack = MemoryBotStack(app, config.stack_name, config, env=env)
    acknowledge_findings(
        stack,
        config,
        runtime=stack.platform.runtime,
        stores=stack.stores,
        dead_letters=stack.dead_letters,
        functions=stack.functions,
        api=stack.api,
        api_access_logs=stack.api_access_logs,
        nightly_run=stack.nightly_run,
        alarms=stack.alarms,
    )
    # Any unacknowledged finding of either pack fails the synth.
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), NIST80053R5Checks(app))
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
