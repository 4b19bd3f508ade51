"""The shapes the CDK app is synthesized in by the infra tests (tests/infra/conftest.py makes them)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CDK_CLI = ROOT / "node_modules" / ".bin" / "cdk"  # `npm ci` installs the CLI pinned in package.json

# Plain `cdk synth` without credentials is environment-agnostic; `cdk deploy` with credentials
# synthesizes for a concrete account and region (ap-northeast-1: the bot's users are in JST).
CONCRETE_ACCOUNT = "123456789012"
CONCRETE_REGIONS = ("eu-west-1", "ap-northeast-1")
SHAPES = ("agnostic", *CONCRETE_REGIONS)


def alarm_metric(props: dict) -> dict:
    """The one metric an alarm watches: as CloudWatch's own fields, or as its one MetricStat
    (how cdk-monitoring-constructs writes it)."""
    if "MetricName" in props:
        return {k: props[k] for k in ("Namespace", "MetricName", "Dimensions", "Period", "Statistic")}
    [query] = props["Metrics"]
    stat = query["MetricStat"]
    return {**stat["Metric"], "Period": stat["Period"], "Statistic": stat["Stat"]}
