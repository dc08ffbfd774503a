"""Slack app (slack-bolt): arrives with the Slack issue; the console notifier stands in."""
