"""gpubot's settings: one section per concept, read once at the edge from a YAML file and the
environment (GPUBOT_ prefix; `settings` is the only reader of os.environ) and passed in."""

from gpubot.config.agent import AgentSettings
from gpubot.config.clusters import ClusterAgentSettings, ClusterSettings, ClusterSlurmSettings
from gpubot.config.policy import (
    AttemptSettings,
    BlastRadiusSettings,
    EscalationSettings,
    GroupSettings,
    OperatorKeySettings,
    PolicySettings,
    PoolSettings,
)
from gpubot.config.reports import IdleReportSettings, ReclaimSettings, ReportSettings
from gpubot.config.server import (
    EvidenceSettings,
    LeaderElectionSettings,
    LogSettings,
    RunbookSettings,
    StoreSettings,
    WebSettings,
)
from gpubot.config.settings import CONFIG_ENV, DEFAULT_CONFIG, Settings, find_config, load_settings
from gpubot.config.slack import SlackRoute, SlackSettings

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG",
    "AgentSettings",
    "AttemptSettings",
    "BlastRadiusSettings",
    "ClusterAgentSettings",
    "ClusterSettings",
    "ClusterSlurmSettings",
    "EscalationSettings",
    "EvidenceSettings",
    "GroupSettings",
    "IdleReportSettings",
    "LeaderElectionSettings",
    "LogSettings",
    "OperatorKeySettings",
    "PolicySettings",
    "PoolSettings",
    "ReclaimSettings",
    "ReportSettings",
    "RunbookSettings",
    "Settings",
    "SlackRoute",
    "SlackSettings",
    "StoreSettings",
    "WebSettings",
    "find_config",
    "load_settings",
]
