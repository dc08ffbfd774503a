"""Error kinds: what went wrong, phrased for the person who has to act on it."""

from __future__ import annotations


class GpubotError(Exception):
    """Base of every error gpubot raises on purpose; its message is one line for a human."""


class ConfigError(GpubotError):
    """The configuration file or environment is missing or invalid."""


class RunbookError(GpubotError):
    """A runbook file is invalid; the message names the file, the line and the field."""


class TemplateError(GpubotError):
    """A runbook template or condition failed to render."""


class ApprovalError(GpubotError):
    """An approval click was refused (expired, already decided, not allowed)."""


class InputError(GpubotError):
    """Input from outside (webhook body, command arguments) is malformed."""


class RunDeferred(GpubotError):
    """A run cannot start yet: another run of its runbook is acting on the same node. It
    starts when that run ends."""


class NotFoundError(GpubotError):
    """A named thing (incident, runbook, approval) does not exist."""


class StepError(GpubotError):
    """A runbook step failed."""


class TemporaryStepError(StepError):
    """A step failed in a way that may succeed later; the executor retries it after `delay`."""

    def __init__(self, message: str, *, delay: float = 1.0) -> None:
        super().__init__(message)
        self.delay = delay


class ConflictError(TemporaryStepError):
    """The object changed since it was read (HTTP 409): read it again before writing."""


class PermanentStepError(StepError):
    """A step failed in a way that retrying will not fix."""


class MetricsUnavailableError(TemporaryStepError):
    """Prometheus did not answer (refused, timed out, 5xx): asking again later may work."""


class NeedsHumanError(StepError):
    """Someone changed what the step acts on (e.g. uncordoned the node mid-drain): the run
    pauses for a human instead of fighting them or failing."""


class StopRunError(GpubotError):
    """The run has nothing (more) to do: a guard refused its target, or an owner objected.
    The executor ends it cleanly, cancelled with this one-line reason; not a failure."""


class DisruptionBlockedError(GpubotError):
    """An eviction was refused because a PodDisruptionBudget allows no disruption now."""

    def __init__(self, message: str, *, budget: str = "") -> None:
        super().__init__(message)
        self.budget = budget


class SignatureError(ApprovalError):
    """A signed break-glass vote that does not count: malformed, forged, or signed by a key
    the server does not list. `key` is the fingerprint the signature names, when readable."""

    def __init__(self, message: str, *, key: str = "") -> None:
        super().__init__(message)
        self.key = key


class ObjectionClosed(ApprovalError):
    """The grace period is over (or someone objected already): the button has no use left."""


class IdentityUnavailableError(GpubotError):
    """The API server could not say who a token is (unreachable, 5xx, refused by RBAC):
    the caller answers 503, so the sender tries again; it is never read as a yes."""
