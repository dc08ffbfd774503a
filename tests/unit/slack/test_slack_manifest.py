"""The app manifest asks for exactly the OAuth scopes of the Web API methods the code calls."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "deploy" / "slack-manifest.yaml"
# slack_sdk method name -> the bot scope Slack requires for it (api.slack.com/methods).
SCOPES = {
    "chat_postMessage": "chat:write",
    "chat_update": "chat:write",
    "chat_postEphemeral": "chat:write",
    "chat_delete": "chat:write",
    "usergroups_users_list": "usergroups:read",
    "usergroups_list": "usergroups:read",
    "users_info": "users:read",
    "conversations_info": "channels:read",
    "files_getUploadURLExternal": "files:write",
    "files_completeUploadExternal": "files:write",
    "files_upload_v2": "files:write",
    "reactions_add": "reactions:write",
    "auth_test": None,  # no scope
}
_PREFIXES = ("chat_", "usergroups_", "users_", "conversations_", "files_", "reactions_", "auth_")
_CALL = re.compile(r"\.([a-z]+_[A-Za-z_0-9]+)\(")


def used_scopes() -> set[str]:
    scopes: set[str] = set()
    # The Slack adapter only: slack_sdk is imported nowhere else (an import-linter contract),
    # and other clients' methods (the Kubernetes client's auth_settings) share the prefixes.
    for path in sorted((ROOT / "gpubot" / "slack").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for method in _CALL.findall(source):
            if not method.startswith(_PREFIXES):
                continue
            assert method in SCOPES, f"{path}: {method}: add its scope to this test"
            if SCOPES[method]:
                scopes.add(str(SCOPES[method]))
        if re.search(r"@app\.command\(", source):
            scopes.add("commands")
    return scopes


def test_manifest_scopes_match_the_code() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    declared = set(manifest["oauth_config"]["scopes"]["bot"])
    assert declared == used_scopes() == {"chat:write", "commands", "usergroups:read", "files:write"}


def test_manifest_declares_the_command_interactivity_and_socket_mode() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    [command] = manifest["features"]["slash_commands"]
    assert command["command"] == "/gpu"
    assert command["url"].endswith("/slack/events")
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["settings"]["interactivity"]["request_url"].endswith("/slack/events")
    assert manifest["settings"]["socket_mode_enabled"] is True
