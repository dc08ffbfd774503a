"""Slack mrkdwn escaping: outside text is inert; only mentions gpubot wrote itself stay live.

Slack reads `&`, `<` and `>` as control characters: `<!channel>`, `<!here>`, `<!everyone>`,
`<@U…>`, `<#C…>`, `<!subteam^S…>` and `<url|label>` all start with `<`. Escaping the three
(Slack's documented rule) makes any text show as typed and ping nobody. Everything that
comes from an alert, a label, an annotation, a URL, a pod log or a command is escaped; the
only live markup is a user or group mention gpubot built from an id it trusts and declared
on the message (`Message.mentions`), and links whose label gpubot chose (`link`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from urllib.parse import urlsplit

# The only shapes that may stay live: a user (U…/W…) or a user group (S…), no label part.
_MENTION = re.compile(r"<@[UW][A-Z0-9]{1,20}>|<!subteam\^S[A-Z0-9]{1,20}>")
_USER_ID = re.compile(r"[UW][A-Z0-9]{1,20}")
_GROUP_ID = re.compile(r"S[A-Z0-9]{1,20}")
_CUT_ENTITY = re.compile(r"&[a-z]*\Z")  # "&am" left by a cut through "&amp;"
_CUT_MARKUP = re.compile(r"<[^<>]*\Z")  # "<@U12" left by a cut through a mention or link
_URL_LIMIT = 2000


def escape(text: str) -> str:
    """`text` as Slack shows it literally: &, < and > become entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def is_mention(token: str) -> bool:
    """A user or user-group mention of the one shape gpubot builds (`<@U…>`, `<!subteam^S…>`)."""
    return _MENTION.fullmatch(token) is not None


def mentions_in(text: str) -> tuple[str, ...]:
    """The user and group mentions in a text gpubot composed itself from ids it trusts (a
    refusal naming an owner or an earlier objector); never call it on outside text."""
    return tuple(dict.fromkeys(_MENTION.findall(text)))


def user_mention(user: str) -> str | None:
    """`<@U…>` for a Slack user id, or None when `user` is not one."""
    return f"<@{user}>" if _USER_ID.fullmatch(user) else None


def group_mention(group: str) -> str | None:
    """`<!subteam^S…>` for a Slack user-group id, or None when `group` is not one."""
    return f"<!subteam^{group}>" if _GROUP_ID.fullmatch(group) else None


def render(text: str, *, live: Collection[str] = ()) -> str:
    """`text` escaped, except exact occurrences of the mentions in `live`.

    Only user and group mentions of the strict shape can be live; `<!channel>`, `<!here>`,
    `<#C…>` or a link in `live` are escaped like any other text. A copy of a live mention
    inside outside text stays live too, which pings nobody who was not pinged already.
    """
    allowed = sorted({m for m in live if is_mention(m)}, key=len, reverse=True)
    if not allowed:
        return escape(text)
    pattern = re.compile("|".join(re.escape(m) for m in allowed))
    out, last = [], 0
    for match in pattern.finditer(text):
        out.append(escape(text[last : match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(escape(text[last:]))
    return "".join(out)


def cut(text: str, limit: int) -> str:
    """Rendered mrkdwn in at most `limit` characters, never ending inside an entity or a
    mention (a half `&amp;` or `<@U1` would show as garbage or swallow what follows)."""
    if len(text) <= limit:
        return text
    head = text[: max(limit - 1, 0)]
    head = _CUT_MARKUP.sub("", _CUT_ENTITY.sub("", head))
    return head + "…"


def safe_url(url: str) -> str | None:
    """An http(s) URL fit to stand inside `<…|label>`, or None for anything else.

    `|`, `<`, `>` and spaces are percent-encoded (a `|` would let the URL choose the
    label) and `&` becomes `&amp;` (Slack decodes it back); other schemes, no host,
    control characters and very long URLs are refused.
    """
    url = url.strip()
    if not url or len(url) > _URL_LIMIT or any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    encoded = url
    for raw, code in (("|", "%7C"), ("<", "%3C"), (">", "%3E"), (" ", "%20"), ('"', "%22")):
        encoded = encoded.replace(raw, code)
    return encoded.replace("&", "&amp;")


def link(url: str, label: str) -> str:
    """A live link with gpubot's own `label`; an unsafe URL shows as escaped text instead."""
    safe = safe_url(url)
    if safe is None:
        return escape(f"{label}: {url}")
    return f"<{safe}|{escape(label)}>"
