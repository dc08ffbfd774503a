"""Slack app (slack-bolt): `/gpu`, approval buttons, incident threads, a rate-limited outbox."""
