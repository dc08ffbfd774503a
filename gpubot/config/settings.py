"""Settings from a YAML file and the environment (GPUBOT_ prefix): the only reader of
os.environ; where a command finds its config file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from gpubot.config.agent import AgentSettings
from gpubot.config.clusters import ClusterSettings, _default_clusters
from gpubot.config.policy import PolicySettings
from gpubot.config.reports import ReclaimSettings, ReportSettings
from gpubot.config.server import (
    EvidenceSettings,
    LeaderElectionSettings,
    LogSettings,
    RunbookSettings,
    StoreSettings,
    WebSettings,
)
from gpubot.config.slack import SlackSettings
from gpubot.domain.incidents.correlation import unlabelled_cluster
from gpubot.domain.validation_errors import first_problem
from gpubot.errors import ConfigError


class Settings(BaseSettings):
    """gpubot's configuration. Secrets come only from the environment."""

    model_config = SettingsConfigDict(
        env_prefix="GPUBOT_", env_nested_delimiter="__", extra="forbid"
    )

    slack: SlackSettings = Field(default_factory=SlackSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    runbooks: RunbookSettings = Field(default_factory=RunbookSettings)
    clusters: list[ClusterSettings] = Field(default_factory=_default_clusters, min_length=1)
    default_cluster: str | None = Field(
        None,
        description="the cluster of an alert without a `cluster` label and of a command "
        "without cluster=; unset: the only cluster, and with several, such an alert is "
        "refused (logged, counted, said in the channel)",
    )
    policy: PolicySettings = Field(default_factory=PolicySettings)
    web: WebSettings = Field(default_factory=WebSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    dry_run: bool = Field(False, description="plan and record every step, change nothing")
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)
    reports: ReportSettings = Field(default_factory=ReportSettings)
    reclaim: ReclaimSettings = Field(default_factory=ReclaimSettings)
    evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)

    slack_bot_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("SLACK_BOT_TOKEN")
    )
    slack_signing_secret: SecretStr | None = Field(
        None, validation_alias=AliasChoices("SLACK_SIGNING_SECRET")
    )
    slack_app_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("SLACK_APP_TOKEN")
    )
    webhook_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("GPUBOT_WEBHOOK_TOKEN")
    )
    agent_token: SecretStr | None = Field(None, validation_alias=AliasChoices("GPUBOT_AGENT_TOKEN"))
    agent_read_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("GPUBOT_AGENT_READ_TOKEN")
    )
    agent_mutate_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("GPUBOT_AGENT_MUTATE_TOKEN")
    )
    audit_key: SecretStr | None = Field(None, validation_alias=AliasChoices("GPUBOT_AUDIT_KEY"))
    pod_name: str | None = Field(
        None,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="the bot's own pod (GPUBOT_POD_NAME, from the downward API): the tokens it "
        "requests for the agents are bound to it, so they die with it",
    )
    pod_uid: str | None = Field(
        None,
        pattern=r"^[0-9a-f-]{1,64}$",
        description="that pod's uid (GPUBOT_POD_UID)",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment overrides the file, so a Secret or a Helm value can patch one key;
        # never who the operators are (see _FileOnlyIdentity).
        return _FileOnlyIdentity(env_settings), init_settings, file_secret_settings

    def agent_token_value(self) -> str | None:
        """The bot's agent master secret: GPUBOT_AGENT_TOKEN, else agent.token_file's first line."""
        return _secret(self.agent_token, self.agent.token_file, "agent.token_file")

    def agent_node_tokens(self) -> tuple[str | None, str | None]:
        """An agent's own (read, mutate) tokens, from the environment or the token files."""
        return (
            _secret(self.agent_read_token, self.agent.read_token_file, "agent.read_token_file"),
            _secret(
                self.agent_mutate_token, self.agent.mutate_token_file, "agent.mutate_token_file"
            ),
        )

    def cluster(self, name: str) -> ClusterSettings | None:
        return next((c for c in self.clusters if c.name == name), None)

    @property
    def fallback_cluster(self) -> str | None:
        """Where an alert without a `cluster` label goes: `default_cluster`, else the only
        configured cluster; None when several are configured and none is the default."""
        return unlabelled_cluster(
            default=self.default_cluster, configured=[c.name for c in self.clusters]
        )

    @model_validator(mode="after")
    def _known_default_cluster(self) -> Settings:
        names = [c.name for c in self.clusters]
        if self.default_cluster is not None and self.default_cluster not in names:
            raise ValueError(
                f"default_cluster: {self.default_cluster!r} is not a configured cluster "
                f"(clusters: {', '.join(names)})"
            )
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            raise ValueError(f"clusters: {duplicate!r} is configured twice")
        return self


class _FileOnlyIdentity(PydanticBaseSettingsSource):
    """The environment, refusing any value for who the break-glass operators are: whoever
    runs a command sets its environment, so a key or identity from there would let them be
    someone else (GPUBOT_POLICY__OPERATOR_KEYS, or `operator_keys` in GPUBOT_POLICY's JSON)."""

    def __init__(self, inner: PydanticBaseSettingsSource) -> None:
        super().__init__(inner.settings_cls)
        self._inner = inner

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._inner.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        data = self._inner()
        policy = data.get("policy")
        if isinstance(policy, dict):
            for key in policy:
                if str(key).lower() in _FILE_ONLY:
                    raise ConfigError(
                        f"GPUBOT_POLICY__{str(key).upper()}: policy.{str(key).lower()} is read "
                        "from the config file only, never from the environment"
                    )
        return data


_FILE_ONLY = frozenset({"operator_keys", "operators"})


def _secret(value: SecretStr | None, path: Path | None, key: str) -> str | None:
    """A secret from the environment, else the first line of a file; None when neither is set."""
    if value is not None:
        return value.get_secret_value() or None
    if path is None:
        return None
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror}") from exc
    if not token:
        raise ConfigError(f"{key}: {path} is empty")
    return token


# Where the Helm chart mounts the config in the bot's pod, so `kubectl exec deploy/gpubot --
# gpubot runs` reads the same file as serve without --config.
DEFAULT_CONFIG = Path("/etc/gpubot/config/config.yaml")
CONFIG_ENV = "GPUBOT_CONFIG"


def find_config(given: Path | None) -> Path | None:
    """The config file a command reads, found as kubectl finds its kubeconfig: `--config`,
    else $GPUBOT_CONFIG, else DEFAULT_CONFIG when it exists; None: no file (built-in
    defaults). A file named by the flag or the variable must exist (ConfigError)."""
    if given is not None:
        if not given.is_file():
            raise ConfigError(f"{given}: no such config file")
        return given
    named = os.environ.get(CONFIG_ENV, "")
    if named:
        path = Path(named)
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={named}: no such config file")
        return path
    return DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None


def load_settings(path: Path | None = None, **overrides: Any) -> Settings:
    """Settings from `path` (YAML) and the environment; ConfigError with one line if invalid."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else "?"
            raise ConfigError(
                f"{path}:{line}: invalid YAML: {getattr(exc, 'problem', exc)}"
            ) from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{path}: config must be a mapping of sections")
        data = loaded or {}
    data.update(overrides)
    try:
        return Settings(**data)
    except ValidationError as exc:
        source = f"{path}: " if path else ""
        raise ConfigError(first_problem(exc, prefix=source)) from exc
