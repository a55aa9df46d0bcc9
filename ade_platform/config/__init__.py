"""One typed settings object, read from ade.yaml + environment once at start-up and passed explicitly.

One module per section of ade.yaml (`store.py` for `store:`, `bi.py` for `bi:`, ...), `settings.py` for the whole,
`loading.py` for reading the file; every public name is re-exported here: `from ade_platform.config import X`.
"""

from ade_platform.config.access import EFFECTS, AccessSettings, CallerLimits, Effect, OidcSettings, Role
from ade_platform.config.base import DEFAULT_CONFIG, REPO_ROOT, ConfigError
from ade_platform.config.bi import BiSettings, LookerSettings, MetabaseSettings
from ade_platform.config.dagster import DagsterInstanceSettings, ScheduleSettings
from ade_platform.config.datasets import DatasetRecipeSettings, DatasetSettings
from ade_platform.config.dbt import DbtSettings
from ade_platform.config.dbt_cloud import DbtCloudSettings
from ade_platform.config.incidents import IncidentSettings, IncidentWebhook
from ade_platform.config.lineage import LineageBuilder, LineageSettings
from ade_platform.config.loading import load_settings
from ade_platform.config.mcp import (
    MIN_TOKEN_LENGTH,
    HttpSettings,
    LimitSettings,
    McpSettings,
)
from ade_platform.config.openlineage import OpenLineageEmit, OpenLineageReceive, OpenLineageSettings
from ade_platform.config.orchestrators import (
    AirflowSettings,
    DagsterOrchestratorSettings,
    OrchestratorSettings,
    PrefectSettings,
    TriggerSettings,
)
from ade_platform.config.pii import PiiPatternSettings, PiiSettings
from ade_platform.config.profiles import ProfileSettings
from ade_platform.config.settings import Settings
from ade_platform.config.snowfakery import SnowfakerySettings
from ade_platform.config.snowflake import (
    SnowflakeDefaultsSettings,
    SnowflakeExclusionSettings,
    SnowflakeGuardrailSettings,
    SnowflakeSettings,
    SnowflakeSyncSettings,
)
from ade_platform.config.store import S3StoreSettings, StoreSettings
from ade_platform.config.toolsets import SERVER_ALIASES, TOOLSET_MODULES, TOOLSETS
from ade_platform.config.warehouses import (
    BigQueryWarehouse,
    DuckDBWarehouse,
    FreshnessTarget,
    SnowflakeWarehouse,
    Warehouse,
)

__all__ = [
    "DEFAULT_CONFIG",
    "EFFECTS",
    "MIN_TOKEN_LENGTH",
    "REPO_ROOT",
    "SERVER_ALIASES",
    "TOOLSETS",
    "TOOLSET_MODULES",
    "AccessSettings",
    "AirflowSettings",
    "BiSettings",
    "BigQueryWarehouse",
    "CallerLimits",
    "ConfigError",
    "DagsterInstanceSettings",
    "DagsterOrchestratorSettings",
    "DatasetRecipeSettings",
    "DatasetSettings",
    "DbtCloudSettings",
    "DbtSettings",
    "DuckDBWarehouse",
    "Effect",
    "FreshnessTarget",
    "HttpSettings",
    "IncidentSettings",
    "IncidentWebhook",
    "LimitSettings",
    "LineageBuilder",
    "LineageSettings",
    "LookerSettings",
    "McpSettings",
    "MetabaseSettings",
    "OidcSettings",
    "OpenLineageEmit",
    "OpenLineageReceive",
    "OpenLineageSettings",
    "OrchestratorSettings",
    "PiiPatternSettings",
    "PiiSettings",
    "PrefectSettings",
    "ProfileSettings",
    "Role",
    "S3StoreSettings",
    "ScheduleSettings",
    "Settings",
    "SnowfakerySettings",
    "SnowflakeDefaultsSettings",
    "SnowflakeExclusionSettings",
    "SnowflakeGuardrailSettings",
    "SnowflakeSettings",
    "SnowflakeSyncSettings",
    "SnowflakeWarehouse",
    "StoreSettings",
    "TriggerSettings",
    "Warehouse",
    "load_settings",
]
