"""Synthesize the stack in several shapes and write each template, byte for byte as CDK writes it.

For refactors of infra/: run it at the commit before and the commit after, then diff the two
folders. A resource that moved in the construct tree shows up as a changed logical id (for a
table or a key of a deployed stack: a replacement) and as a changed ``aws:cdk:path``, which every
resource carries here. Both nag packs run as in a real synth (an unacknowledged finding fails it);
asset bundling is skipped (the asset hashes are the sources' own, see code_asset.py and layer.py).

    python tests/infra/dump_templates.py OUTDIR
    diff -r OUTDIR_BEFORE OUTDIR_AFTER
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT, ROOT / "functions"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

# Every optional part of the stack switched on: the customer key, the alarm topic, reserved
# concurrency, a cross-region model, the HTTP decision backend, another runtime and architecture.
EVERYTHING = {
    "encrypt_personal_data": "true",
    "alarm_email": "ops@example.com",
    "reply_reserved_concurrency": "5",
    "extraction_reserved_concurrency": "3",
    "decision_model": "http",
    "jev_url": "https://jev.example.com/decide",
    "bedrock_chat_model_id": "apac.anthropic.claude-3-haiku-20240307-v1:0",
    "log_retention_days": "7",
    "python_version": "3.12",
    "architecture": "x86_64",
    "model_rpm": "60",
}
SHAPES: dict[str, tuple[dict[str, str], str | None]] = {
    "default": ({}, None),
    "default-ap-northeast-1": ({}, "ap-northeast-1"),
    "everything": (EVERYTHING, None),
    "everything-eu-west-1": (EVERYTHING, "eu-west-1"),
}
CONCRETE_ACCOUNT = "123456789012"


def synthesize(context: dict[str, str], region: str | None) -> dict[str, str]:
    """The template as written, and (stack traces left out) the construct metadata that carries the
    nag acknowledgements and the logical ids, and the nag packs' report of what they suppressed."""
    from infra.app import build_app

    for key in ("CDK_DEFAULT_ACCOUNT", "CDK_DEFAULT_REGION"):
        os.environ.pop(key, None)
    if region:
        os.environ.update(CDK_DEFAULT_ACCOUNT=CONCRETE_ACCOUNT, CDK_DEFAULT_REGION=region)
    outdir = tempfile.mkdtemp(prefix="cdk-dump-")
    app, stack = build_app(
        outdir=outdir,
        context={**context, "aws:cdk:bundling-stacks": [], "aws:cdk:enable-path-metadata": True},
    )
    assembly = app.synth()  # both nag packs run here
    out = Path(assembly.directory)
    metadata = {
        path: [{"type": e["type"], "data": e.get("data")} for e in entries if e["type"] != "aws:cdk:creationStack"]
        for path, entries in json.loads((out / f"{stack.artifact_id}.metadata.json").read_text()).items()
    }
    report = json.loads((out / "validation-report.json").read_text())
    nag = [
        {
            "plugin": plugin["pluginName"],
            "conclusion": plugin["conclusion"],
            "violations": len(plugin["violations"]),
            "suppressed": [
                [
                    v["ruleName"],
                    v["acknowledgedAt"],
                    v["reason"],
                    [c["constructPath"] for c in v["violatingConstructs"]],
                ]
                for v in plugin["suppressedViolations"]
            ],
        }
        for plugin in report["pluginReports"]
    ]
    dumped = {
        "template.json": (out / stack.template_file).read_text(),
        "metadata.json": json.dumps(metadata, indent=1),
        "nag.json": json.dumps(nag, indent=1),
    }
    shutil.rmtree(outdir, ignore_errors=True)
    return dumped


def main(outdir: str) -> None:
    target = Path(outdir)
    target.mkdir(parents=True, exist_ok=True)
    for name, (context, region) in SHAPES.items():
        for suffix, text in synthesize(context, region).items():
            (target / f"{name}.{suffix}").write_text(text)
        print(name, file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
