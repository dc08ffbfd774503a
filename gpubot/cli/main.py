"""`gpubot` command line: serve, demo, plan, runbooks, audit, report, triage, xid, break-glass."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpubot.errors import GpubotError, InputError

if TYPE_CHECKING:
    from gpubot.agent.api import Callers
    from gpubot.agent.token_review import HttpTokenReviewer
    from gpubot.config import Settings
    from gpubot.wiring import App

# Heavy imports (SQLAlchemy, uvicorn, pydantic models) happen inside the commands,
# so `gpubot --help` stays fast.


def _log_args(p: argparse.ArgumentParser) -> None:
    """--log-format and --log-level, shared by serve and agent (they win over `log.*`)."""
    p.add_argument(
        "--log-format",
        choices=["auto", "json", "text"],
        help="log lines on stderr: json, text, or auto (text on a terminal, else JSON; "
        "default from config log.format: auto)",
    )
    p.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        help="gpubot's records at this level and above (default from config log.level: info)",
    )


def _config_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="YAML config (same file as serve); default: $GPUBOT_CONFIG, else "
        "/etc/gpubot/config/config.yaml if present, else the built-in defaults "
        "(simulated cluster, SQLite ./gpubot.db)",
    )


class _PrintVersion(argparse.Action):
    """`--version`: the installed package's version (what `pip show gpubot` says), looked
    up only when asked: importlib.metadata is slow to import for every other command."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("gpubot")
        except PackageNotFoundError:  # run from a source tree that was never installed
            found = "(not installed)"
        print(f"{parser.prog} {found}")
        parser.exit()


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="gpubot",
        description="Incident-response bot for GPU clusters on Kubernetes or Slurm: "
        "runbooks, approvals, audit.",
    )
    top.add_argument("--version", action=_PrintVersion, nargs=0, help="print the version")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "serve",
        help="run the bot (webhook, probes, metrics)",
        description="Serve POST /alertmanager, /healthz, /readyz, /metrics.",
    )
    _config_arg(p)
    p.add_argument("--host", help="bind address (default from config: 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default from config: 8080)")
    _log_args(p)

    p = sub.add_parser(
        "agent",
        help="run the node agent (GPU reads and actions over HTTP, XID watcher)",
        description="The per-node agent (a DaemonSet): reads the node's GPUs through NVML, "
        "sets power limits within the device's range, resets a GPU no process holds, and "
        "forwards critical XID events to the bot (agent.bot_url). On Kubernetes "
        "(agent.identity: serviceaccount, the chart's setting) it sends its projected "
        "ServiceAccount token (agent.identity_token_file) and takes calls only from the bot's "
        "ServiceAccount (agent.bot_service_account) with a token for this node alone "
        "(audience AUDIENCE:NODE; agent.bot_audience), checked with the TokenReview API at "
        "agent.api_url: nothing to provision on the node. Without Kubernetes (identity: hmac, "
        "e.g. Slurm hosts) it holds only its own node's tokens: GPUBOT_AGENT_READ_TOKEN (or "
        "agent.read_token_file) to be read, and GPUBOT_AGENT_MUTATE_TOKEN (or "
        "agent.mutate_token_file) to act; without a mutate token it is read-only. Print them "
        "with `gpubot agent-token --node NAME`. Without a "
        "token: /healthz (alive), /readyz (200 when NVML answers, else 503 with the reason) and "
        "/metrics (Prometheus counters of requests, resets, power limits, diagnostics, XID "
        "events, NVML errors). Logs one line per start, refusal, action, XID event and "
        "shutdown, in serve's formats (log.format, log.level, or the flags below).",
    )
    _config_arg(p)
    p.add_argument(
        "--driver",
        choices=["nvml", "simulated"],
        default="nvml",
        help="nvml (the real GPUs, default) or simulated (one node of the simulated cluster)",
    )
    p.add_argument("--listen", metavar="HOST:PORT", help="bind (default from config: 0.0.0.0:9400)")
    p.add_argument("--node", help="this node's name (default: agent.node, else the host name)")
    _log_args(p)

    p = sub.add_parser(
        "agent-token",
        help="print a node agent's tokens, derived from the bot's master secret (hmac mode)",
        description="For agents on hosts without Kubernetes (agent identity hmac, e.g. Slurm "
        "nodes; on Kubernetes the agents use ServiceAccount tokens and need none). "
        "Derive NODE's agent tokens from the master secret (GPUBOT_AGENT_TOKEN or "
        "agent.token_file): HMAC-SHA256(master, 'gpubot-agent:SCOPE:NODE'), hex. The read "
        "token reads that node's GPUs; the mutate token also sets power limits and resets "
        "them, on that node only. Without --scope, prints both as environment lines.",
    )
    _config_arg(p)
    p.add_argument("--node", required=True, help="the node's name, as the cluster reports it")
    p.add_argument("--scope", choices=["read", "mutate"], help="print only this token, bare")

    p = sub.add_parser(
        "demo",
        help="an XID 79 incident end to end on the simulated cluster",
        description="Start the service on the simulated cluster with SQLite in a "
        "temporary directory, post an XID 79 alert through the real HTTP intake, "
        "show the thread, approve, run, and print the verified audit trail.",
    )
    p.add_argument(
        "--interactive",
        action="store_true",
        help="approve or deny each gated step at a prompt instead of the simulated approver "
        "(recorded as typed at the terminal); no answer on stdin: nothing recorded, exit 1",
    )

    p = sub.add_parser(
        "plan",
        help="show what a runbook would do, for an alert or with parameters",
        description="Dry-run: read live state, change nothing, store nothing. --alert plans "
        "the runbooks an Alertmanager payload matches; --runbook plans one runbook with "
        "--param KEY=VALUE arguments (as `/gpu plan`) and exits 1 when the plan lists "
        "problems.",
    )
    _config_arg(p)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--alert",
        type=Path,
        metavar="FILE",
        help="Alertmanager webhook JSON (version 4)",
    )
    which.add_argument("--runbook", metavar="NAME", help="a runbook by name")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a runbook parameter (repeat for more); with --runbook",
    )
    p.add_argument("--cluster", help="with --runbook: the cluster (default: the first configured)")
    p.add_argument("--json", action="store_true", help="print the plans as JSON")

    p = sub.add_parser("runbooks", help="runbook tools")
    rsub = p.add_subparsers(dest="runbooks_command", required=True, metavar="SUBCOMMAND")
    v = rsub.add_parser(
        "validate",
        help="check runbook files (file:line: field: reason)",
        description="Check runbooks as `serve` does at start-up, so it will not refuse them "
        "later: the schema; actions exist; each step's literal args against its action's "
        "schema; `auto` only on reversible actions; approver groups exist in the config's "
        "policy (--config; without it, the default policy); templates and `when` read only "
        "declared params, earlier steps and their actions' declared outputs. Exits 1 with "
        "one `file:line: field: reason` line per problem.",
    )
    _config_arg(v)
    v.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="runbook files or directories of *.yaml (default: the configured runbooks)",
    )

    from gpubot.cli.actions import add_parser as add_actions_parser

    add_actions_parser(sub, _config_arg)

    from gpubot.cli.audit import add_parsers as add_audit_parsers

    add_audit_parsers(sub, _config_arg)

    from gpubot.cli.knowledge import add_parsers as add_knowledge_parsers

    add_knowledge_parsers(sub)
    from gpubot.cli.report import add_parser as add_report_parser

    add_report_parser(sub, _config_arg)
    from gpubot.cli.gpus import add_parsers as add_gpus_parsers

    add_gpus_parsers(sub, _config_arg)
    from gpubot.cli.evidence import add_parsers as add_evidence_parsers

    add_evidence_parsers(sub, _config_arg)
    from gpubot.cli.ops import add_parsers as add_ops_parsers
    from gpubot.cli.policy import add_parser as add_policy_parser

    add_ops_parsers(sub, _config_arg)
    add_policy_parser(sub, _config_arg)
    return top


def _settings(path: Path | None):  # type: ignore[no-untyped-def]
    from gpubot.config import find_config, load_settings

    return load_settings(find_config(path))


def _app(path: Path | None) -> App:
    from gpubot.wiring import build_app

    return build_app(_settings(path))


async def _plan(args: argparse.Namespace) -> int:
    if args.runbook is not None:
        from gpubot.cli.plan import run_plan

        return await run_plan(args, _settings(args.config))
    if args.param or args.cluster:
        raise InputError("--param and --cluster go with --runbook")
    from pydantic import ValidationError

    from gpubot.domain.incidents.alerts import AlertmanagerPayload

    try:
        body = args.alert.read_bytes()
    except OSError as exc:
        raise InputError(f"{args.alert}: {exc.strerror}") from exc
    try:
        payload = AlertmanagerPayload.model_validate_json(body)
    except ValidationError as exc:
        from gpubot.domain.validation_errors import first_problem

        reason = first_problem(exc)
        raise InputError(f"{args.alert}: not an Alertmanager payload: {reason}") from exc
    from gpubot.config import StoreSettings
    from gpubot.wiring import build_app

    # A plan stores nothing: an in-memory database, not the configured one.
    settings = _settings(args.config).model_copy(update={"store": StoreSettings(url="sqlite://")})
    app = build_app(settings)
    try:
        plans = await app.service.plan_payload(payload)
    finally:
        await app.aclose()
    if args.json:
        print(json.dumps([p.as_json() for p in plans], indent=2))
        return 0
    if not plans:
        print("no runbook matches this alert")
    from gpubot.backends.console import render
    from gpubot.domain.messages import plan_message

    for plan in plans:
        print("\n".join(render(plan_message(plan))))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from gpubot.cli.runbooks import run_validate

    return run_validate(args, _settings(args.config))


def _actions(args: argparse.Namespace) -> int:
    from gpubot.cli.actions import run_actions
    from gpubot.engine.registry import builtin_registry
    from gpubot.loaded_rules import build_reclaim

    settings = _settings(args.config)
    return run_actions(args, builtin_registry(reclaim=build_reclaim(settings)))


async def _audit(args: argparse.Namespace) -> int:
    from gpubot.cli.audit import run_audit

    return await run_audit(_settings(args.config), args)


async def _serve(args: argparse.Namespace) -> int:
    from gpubot.cli.listen import check_port, listen_problem
    from gpubot.cli.serve import log_start, setup_logging
    from gpubot.web.server import make_server, serve
    from gpubot.wiring import agent_event_auth, build_app

    check_port(args.port)
    s = _settings(args.config)
    host, port = args.host or s.web.host, args.port or s.web.port
    if problem := listen_problem(host, port):  # before anything starts or logs
        print(f"gpubot: error: {problem}", file=sys.stderr)
        return 1
    setup_logging(s, fmt=args.log_format, level=args.log_level)  # before anything logs
    app = build_app(s)
    token = s.webhook_token.get_secret_value() if s.webhook_token else None
    server = make_server(
        app.service,
        host=host,
        port=port,
        webhook_token=token,
        agent_auth=agent_event_auth(s),  # XID events from node agents (POST /agent/events)
        max_body_bytes=s.web.max_body_bytes,
        body_timeout_s=s.web.body_timeout_seconds,
        header_timeout_s=s.web.header_timeout_seconds,
        max_connections=s.web.max_connections,
        slack_events=app.slack.handle_http if app.slack and s.slack.mode == "http" else None,
        metrics=app.metrics,
        access_log=s.log.access_log,
    )
    from gpubot.cli.audit import log_head

    log_start(app)  # what this process serves, in the log: clusters, Slack, runbooks
    # The chain head, in the log: at start, after each run, at shutdown.
    await (
        app.service.background.record_policy()
    )  # its digest in the log, and in the trail when changed
    await log_head(app.store, "serve starting")
    left = s.web.shutdown_grace_seconds
    try:
        left = await serve(
            app.service,
            server,
            companions=app.companions(),
            shutdown_grace_s=s.web.shutdown_grace_seconds,
        )
    finally:
        await log_head(app.store, "serve stopping")
        # Slack gets what is left of the grace (a second kept for the exit), at most 10 s.
        await app.aclose(flush_seconds=min(10.0, max(0.5, left - 1.0)))
    return 0


async def _agent(args: argparse.Namespace) -> int:
    import socket

    from gpubot.agent.server import AgentOptions, parse_listen, serve_agent
    from gpubot.cli.serve import setup_logging
    from gpubot.config import load_settings

    s = load_settings(args.config)
    host, port = parse_listen(args.listen or s.agent.listen)
    node = args.node or s.agent.node or socket.gethostname()
    callers, event_token, reviewer, secrets = _agent_callers(s, node=node)
    # Before anything logs; the node's own tokens are redacted like the config's secrets.
    setup_logging(s, fmt=args.log_format, level=args.log_level, extra_secrets=secrets)
    from gpubot.wiring import build_agent_driver

    driver, diagnostics, evidence = build_agent_driver(s, driver=args.driver, node=node)
    opts = AgentOptions(
        tokens=callers,
        node=node,
        cluster=s.agent.cluster,
        host=host,
        port=port,
        bot_url=s.agent.bot_url,
        xid_window_s=s.agent.xid_window_seconds,
        reset_timeout_s=s.agent.reset_timeout_seconds,
        diagnostics=diagnostics,
        evidence=evidence,
        event_token=event_token,
        driver_name=args.driver,
    )
    try:
        await serve_agent(driver, driver, opts)
    finally:
        if reviewer is not None:
            await reviewer.aclose()
    return 0


def _agent_callers(
    s: Settings, *, node: str
) -> tuple[Callers, Callable[[], str] | None, HttpTokenReviewer | None, tuple[str | None, ...]]:
    """Who may call the agent, what it sends with its events, its TokenReview client, and
    the node's own tokens to keep out of the log (hmac)."""
    from gpubot.agent.api import AgentTokens
    from gpubot.errors import ConfigError

    a = s.agent
    if a.identity == "serviceaccount":
        from gpubot.agent.bot_identity import BotServiceAccount
        from gpubot.agent.token_review import HttpTokenReviewer

        for key in ("identity_token_file", "api_token_file"):
            path = getattr(a, key)
            if not path.is_file():
                raise ConfigError(f"agent.{key}: {path} is not a file (a projected token?)")
        if a.api_ca_file is not None and not a.api_ca_file.is_file():
            raise ConfigError(f"agent.api_ca_file: {a.api_ca_file} is not a file")
        reviewer = HttpTokenReviewer(
            api_url=a.api_url, token_file=a.api_token_file, ca_file=a.api_ca_file
        )
        from gpubot.domain.control.token_reviews import node_audience

        # per_node: the bot's token for this node alone; one sent to another agent fails here.
        audience = node_audience(a.audience, node) if a.bot_audience == "per_node" else a.audience
        callers = BotServiceAccount(
            reviewer=reviewer,
            audience=audience,
            username=a.bot_service_account,
            cache_seconds=a.review_cache_seconds,
            read_only=a.read_only,
        )
        token_file = a.identity_token_file
        return callers, lambda: token_file.read_text(encoding="utf-8").strip(), reviewer, ()
    read, mutate = s.agent_node_tokens()
    if read is None:
        raise ConfigError(
            "the agent needs its node's tokens: set GPUBOT_AGENT_READ_TOKEN (and "
            "GPUBOT_AGENT_MUTATE_TOKEN to act) or agent.read_token_file; print them on the "
            "bot's side with `gpubot agent-token --node NAME` (on Kubernetes, set "
            "agent.identity: serviceaccount instead)"
        )
    return AgentTokens(read=read, mutate=mutate), None, None, (read, mutate)


def _agent_token(args: argparse.Namespace) -> int:
    from gpubot.config import load_settings
    from gpubot.domain.control.agent_tokens import SCOPES, node_token
    from gpubot.domain.k8s_names import check_node_name
    from gpubot.errors import ConfigError

    try:
        node = check_node_name(args.node)
    except ValueError as exc:
        raise InputError(f"--node: {exc}") from exc
    master = load_settings(args.config).agent_token_value()
    if master is None:
        raise ConfigError("no agent master secret: set GPUBOT_AGENT_TOKEN or agent.token_file")
    if args.scope:
        print(node_token(master=master, node=node, scope=args.scope))
        return 0
    for scope in SCOPES:
        token = node_token(master=master, node=node, scope=scope)
        print(f"GPUBOT_AGENT_{scope.upper()}_TOKEN={token}")
    return 0


async def _report(args: argparse.Namespace) -> int:
    import logging

    from gpubot.cli.report import run_report

    # The report prints its own one-line error; the log's copy of it would be a second line.
    logging.getLogger("gpubot").addHandler(logging.NullHandler())
    app = _app(args.config)
    try:
        return await run_report(app, args)
    finally:
        await app.aclose()


async def _ops(args: argparse.Namespace) -> int:
    from gpubot.backends.store.database import StoreMissingError
    from gpubot.cli.ops import READ_COMMANDS, build_cli_app, run_ops
    from gpubot.config import find_config, load_settings
    from gpubot.wiring import open_existing_store

    found = find_config(args.config)
    settings = load_settings(found)
    try:
        # Break-glass reads and decides over the bot's database: never a new, empty one.
        store = open_existing_store(settings)
    except StoreMissingError as exc:
        if found is not None:
            raise
        raise StoreMissingError(
            f"{exc}; no config file was found: pass --config FILE or set GPUBOT_CONFIG"
        ) from exc
    app = build_cli_app(settings, store=store)
    try:
        if args.command not in READ_COMMANDS:
            # A vote under another audit key (or none) than serve's would split the chain:
            # one line, exit 2, before anything is written.
            await app.service.read.audit_key_matches()
        return await run_ops(args, app=app)
    finally:
        await app.aclose()


def _arun(command: Coroutine[Any, Any, int]) -> int:
    import asyncio  # here, not at the top: `--help`, `xid` and `triage` need no event loop

    return asyncio.run(command)


def run(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "agent":
        return _arun(_agent(args))
    if args.command == "agent-token":
        return _agent_token(args)
    if args.command == "demo":
        from gpubot.demo.run import demo

        return _arun(demo(interactive=args.interactive))
    if args.command == "plan":
        return _arun(_plan(args))
    if args.command == "runbooks":
        return _validate(args)
    if args.command == "actions":
        return _actions(args)
    if args.command == "audit":
        return _arun(_audit(args))
    if args.command in ("triage", "xid"):
        from gpubot.cli.knowledge import run_knowledge

        return run_knowledge(args)
    if args.command == "report":
        return _arun(_report(args))
    if args.command == "policy":
        from gpubot.cli.policy import run_policy

        return _arun(run_policy(_settings(args.config), args))
    if args.command == "gpus":
        from gpubot.cli.gpus import run_gpus

        return _arun(run_gpus(_settings(args.config), args))
    if args.command == "evidence":
        from gpubot.cli.evidence import run_evidence

        return _arun(run_evidence(_settings(args.config), args))
    from gpubot.cli.ops import COMMANDS as OPS_COMMANDS

    if args.command in OPS_COMMANDS:
        return _arun(_ops(args))
    return _arun(_serve(args))


def main(argv: Sequence[str] | None = None) -> None:
    try:
        code = run(argv)
    except GpubotError as exc:
        print(f"gpubot: error: {exc}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:  # `gpubot … | head`: the reader left; say nothing more
        sys.stderr.close()
        code = 141
    sys.exit(code)


if __name__ == "__main__":
    main()
