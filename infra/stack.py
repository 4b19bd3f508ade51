"""The memorybot stack: composes the tables, secrets, functions, the API, the nightly run and the alarms.

Each part is built by its own module on this stack's scope (no nested constructs), so every
resource keeps the construct path and logical id it was deployed with; the order below is the
template's order. tests/infra/test_logical_ids.py pins the ids of everything that holds data.

    parts.py              what one builder hands another (Platform, Stores) and their shared constants
    personal_data_key.py  the customer-managed key of the personal-data tables (optional)
    dynamodb_tables.py    the tables of memorybot.tables
    secrets_manager.py    the Discord and admin secrets
    function_specs.py     what each function is and may touch (its grants, declared once)
    functions.py          the layer, the functions with their logs and roles, the async wiring
    grants.py             a function's IAM statements, from its spec
    api.py                the REST API and its outputs
    nightly.py            the manifest bucket, the state machine, its schedule
    alarms.py             the dashboard and every alarm (cdk-monitoring-constructs), their topic
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from . import functions, nightly
from .alarms import build_alarms
from .api import access_log_group, build_api
from .code_asset import function_code
from .dynamodb_tables import build_tables
from .function_specs import FUNCTIONS, LEDGER_REDACTOR
from .grants import LEDGER_ACTIONS_ALLOWED, LEDGER_REDACTION_ATTRIBUTES
from .nightly import NIGHTLY_SCHEDULE
from .parts import Stores
from .personal_data_key import personal_data_key
from .secrets_manager import build_secrets
from .settings import StackConfig

# Where the tests and tools have always found them.
__all__ = [
    "FUNCTIONS",
    "LEDGER_ACTIONS_ALLOWED",
    "LEDGER_REDACTION_ATTRIBUTES",
    "LEDGER_REDACTOR",
    "NIGHTLY_SCHEDULE",
    "MemoryBotStack",
]


class MemoryBotStack(Stack):
    """Each builder is handed what it uses; what it returns is kept here for the app's checks (nag.py)
    and the tests, which no builder reads."""

    def __init__(self, scope: Construct, construct_id: str, config: StackConfig, **kwargs) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.platform = functions.platform(config)

        key = personal_data_key(self) if config.encrypt_personal_data else None
        self.stores = Stores(
            tables=build_tables(self, key),
            personal_data_key=key,
            manifests=nightly.manifest_bucket(self),
            secrets=build_secrets(self, config),
        )
        self.dead_letters = functions.dead_letter_queue(self)
        layer = functions.dependencies_layer(self, config, self.platform)
        code = function_code(config.python_version)  # the package, with bytecode for the runtime
        self.functions = functions.build_functions(
            self, FUNCTIONS, config=config, platform=self.platform, code=code, layer=layer, stores=self.stores
        )
        functions.reserve_worker_concurrency(config, self.functions)
        functions.wire_async(self.functions, self.dead_letters)
        self.api_access_logs = access_log_group(self, self.platform.log_retention)
        self.api = build_api(self, config, access_logs=self.api_access_logs, functions=self.functions)
        self.nightly_run = nightly.NightlyRun(
            self,
            "NightlyRun",
            config=config,
            functions=self.functions,
            manifests=self.stores.manifests,
            log_retention=self.platform.log_retention,
        )
        self.nightly_schedule = nightly.schedule(
            self, self.nightly_run.state_machine, self.dead_letters, config.timezone
        )
        self.alarms: list[cloudwatch.AlarmBase] = build_alarms(
            self,
            config,
            functions=self.functions,
            dead_letters=self.dead_letters,
            nightly_run=self.nightly_run,
            tables=self.stores.tables,
            api=self.api,
        )
