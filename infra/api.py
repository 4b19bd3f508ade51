"""The REST API: Discord's interactions endpoint and the admin routes (rollback, erase, import), with their outputs.

Built on the stack's own scope with the ids it was deployed with.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import CfnOutput, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from .function_specs import LEDGER_REDACTOR
from .settings import StackConfig

# The admin routes share the tighter limit.
ADMIN_PATHS = ("/memory/rollback/POST", "/memory/erase/POST", "/memory/import/POST")


def access_log_group(scope: Construct, log_retention: logs.RetentionDays) -> logs.LogGroup:
    """The stage's access log (one JSON line per request, no body)."""
    return logs.LogGroup(
        scope,
        "ApiAccessLogs",
        retention=log_retention,
        removal_policy=RemovalPolicy.DESTROY,
    )


def build_api(
    scope: Construct, config: StackConfig, *, access_logs: logs.ILogGroup, functions: Mapping[str, lambda_.IFunction]
) -> apigw.RestApi:
    """The REST API: /interactions for Discord, the admin routes under /memory, and their URLs as outputs."""
    c = config
    api = apigw.RestApi(
        scope,
        "Api",
        rest_api_name=f"{c.stack_name}-api",
        description="memorybot: Discord interactions and the admin routes",
        endpoint_types=[apigw.EndpointType.REGIONAL],
        cloud_watch_role=True,  # execution logs (errors only) need the account's logging role
        cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
        deploy_options=apigw.StageOptions(
            stage_name="prod",
            throttling_rate_limit=c.api_rate_limit,
            throttling_burst_limit=c.api_burst_limit,
            # Errors only and never bodies: bodies carry message text.
            logging_level=apigw.MethodLoggingLevel.ERROR,
            data_trace_enabled=False,
            tracing_enabled=True,
            access_log_destination=apigw.LogGroupLogDestination(access_logs),
            access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                caller=False,
                http_method=True,
                ip=True,
                protocol=True,
                request_time=True,
                resource_path=True,
                response_length=True,
                status=True,
                user=False,
            ),
            method_options={
                path: apigw.MethodDeploymentOptions(
                    throttling_rate_limit=c.rollback_rate_limit,
                    throttling_burst_limit=c.rollback_burst_limit,
                )
                for path in ADMIN_PATHS
            },
        ),
    )
    # Proxy integrations: the function gets the raw body (and isBase64Encoded) to verify signatures.
    interactions = api.root.add_resource("interactions")
    interactions.add_method("POST", apigw.LambdaIntegration(functions["Interactions"], proxy=True))
    memory = api.root.add_resource("memory")
    rollback = memory.add_resource("rollback")
    rollback.add_method("POST", apigw.LambdaIntegration(functions["Admin"], proxy=True))
    _erase_route(scope, api, memory, functions[LEDGER_REDACTOR])
    _import_route(scope, api, memory, functions["Admin"])
    CfnOutput(
        scope,
        "InteractionsUrl",
        value=api.url_for_path("/interactions"),
        description="Paste into the Discord developer portal: Interactions Endpoint URL",
    )
    CfnOutput(
        scope,
        "RollbackUrl",
        value=api.url_for_path("/memory/rollback"),
        description="POST with Authorization: Bearer <admin secret> to undo a nightly run",
    )
    return api


def _erase_route(scope: Construct, api: apigw.RestApi, memory: apigw.Resource, eraser: lambda_.IFunction) -> None:
    erase = memory.add_resource("erase")
    erase.add_method("POST", apigw.LambdaIntegration(eraser, proxy=True))
    CfnOutput(
        scope,
        "EraseUrl",
        value=api.url_for_path("/memory/erase"),
        description='POST {"userId": ...} with Authorization: Bearer <admin secret> to erase one person',
    )


def _import_route(scope: Construct, api: apigw.RestApi, memory: apigw.Resource, admin: lambda_.IFunction) -> None:
    # The admin function serves it: the same secret, and the same table actions as a rollback.
    imports = memory.add_resource("import")
    imports.add_method("POST", apigw.LambdaIntegration(admin, proxy=True))
    CfnOutput(
        scope,
        "ImportUrl",
        value=api.url_for_path("/memory/import"),
        description='POST {"memories": [...]} or an export file with Authorization: Bearer <admin secret>',
    )
