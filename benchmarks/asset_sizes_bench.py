"""Print the size of each function's code asset and of the dependency layer.

Synthesizes the CDK app (the layer really bundled, from the build/layer cache when warm) and
zips each staged asset in memory the way the CDK CLI uploads it. Goals (infra/code_asset.py, the
same the tests hold): code under 640 KiB, layer under 15 MiB, both as the zip Lambda downloads on a cold start (unzipped shown beside).

    python -m benchmarks asset_sizes
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

from infra.code_asset import CODE_GOAL_BYTES as CODE_GOAL
from infra.code_asset import LAYER_GOAL_BYTES as LAYER_GOAL

ROOT = Path(__file__).resolve().parent.parent


def folder_sizes(folder: Path) -> tuple[int, int, int]:
    """(files, bytes unzipped, bytes zipped)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, path.relative_to(folder))
    return len(files), sum(p.stat().st_size for p in files), len(buffer.getvalue())


def staged_assets() -> dict[str, Path]:
    """Asset label ("<Function> code" or "layer") -> staged folder, from a fresh synth."""
    for path in (ROOT, ROOT / "functions"):
        sys.path.insert(0, str(path))
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")
    from infra.app import build_app

    outdir = Path(tempfile.mkdtemp(prefix="asset-sizes-"))
    app, stack = build_app(outdir=str(outdir), builtin_cloud_formation_validation=False)
    app.synth()
    template = json.loads((outdir / f"{stack.stack_name}.template.json").read_text())
    manifest = json.loads((outdir / f"{stack.stack_name}.assets.json").read_text())

    def folder(s3_key: str) -> Path:
        return outdir / manifest["files"][s3_key.removesuffix(".zip")]["source"]["path"]

    found: dict[str, Path] = {}
    for logical_id, resource in sorted(template["Resources"].items()):
        if resource["Type"] == "AWS::Lambda::Function":
            name = logical_id.split("Function")[0]
            found[f"{name} code"] = folder(resource["Properties"]["Code"]["S3Key"])
        elif resource["Type"] == "AWS::Lambda::LayerVersion":
            found["layer"] = folder(resource["Properties"]["Content"]["S3Key"])
    return found


def main() -> None:
    assets = staged_assets()
    print(f"{'asset':<20} {'files':>6} {'unzipped':>12} {'zipped':>12}  goal (zipped)")
    for label, folder in assets.items():
        files, raw, zipped = folder_sizes(folder)
        goal = LAYER_GOAL if label == "layer" else CODE_GOAL
        verdict = "ok" if zipped < goal else "OVER"
        print(f"{label:<20} {files:>6} {raw / 1024:>9.1f} KB {zipped / 1024:>9.1f} KB  < {goal // 1024} KB {verdict}")


if __name__ == "__main__":
    main()
