"""The memorybot stack: composes the tables, secrets, functions, the API, the nightly run and the alarms.

Each part is built by its own module on this stack's scope (no nested constructs), so every
resource keeps the construct path and logical id it was deployed with; the order below is the
template's order. tests/infra/test_logical_ids.py pins the ids of everything that holds data.

    personal_data_key.py  the customer-managed key of the personal-data tables (optional)
    dynamodb_tables.py    the tables of memorybot.tables
    secrets_manager.py    the Discord and admin secrets
    function_specs.py     what each function is and may touch (its grants, declared once)
    functions.py          the layer, the functions with their logs and roles, the async wiring
    grants.py             a function's IAM statements, from its spec
    api.py                the REST API and its outputs
    nightly.py            the manifest bucket, the state machine, its schedule
    alarms.py             the alarms and their topic
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from . import functions, nightly
from .alarms import build_alarms
from .api import build_api
from .code_asset import function_code
from .dynamodb_tables import build_tables
from .function_specs import FUNCTIONS, LEDGER_REDACTOR
from .grants import LEDGER_ACTIONS_ALLOWED, LEDGER_REDACTION_ATTRIBUTES, cross_region_models
from .nightly import NIGHTLY_SCHEDULE
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
    def __init__(self, scope: Construct, construct_id: str, config: StackConfig, **kwargs) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.runtime = functions.RUNTIMES[config.python_version]
        self.architecture = functions.ARCHITECTURES[config.architecture]
        self.log_retention = functions.log_retention(config)

        self.personal_data_key = personal_data_key(self) if config.encrypt_personal_data else None
        self.tables = build_tables(self, self.personal_data_key)
        self.manifests = nightly.manifest_bucket(self)
        self.secrets = build_secrets(self, config)
        self.dead_letters = functions.dead_letter_queue(self)
        self.layer = functions.dependencies_layer(self)
        self.code = function_code(config.python_version)  # the package, with bytecode for the runtime
        self.functions = {spec.name: functions.build_function(self, spec) for spec in FUNCTIONS}
        functions.reserve_worker_concurrency(self)
        functions.wire_async(self)
        self.api = build_api(self)
        self.nightly_run = nightly.NightlyRun(self, "NightlyRun", self)
        nightly.schedule(self, self.nightly_run)
        self.alarms: list[cloudwatch.Alarm] = build_alarms(self)

    @property
    def cross_region_models(self) -> tuple[str, ...]:
        """Base model ids reached through a cross-region inference profile (granted in every region)."""
        return cross_region_models(self.config)
