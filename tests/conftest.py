"""Settings for the whole suite."""

from __future__ import annotations

import freezegun

# The kubernetes client loads its pydantic models lazily (a module __getattr__). freezegun
# scans every loaded module when a freeze starts, which would load them with FakeDatetime
# patched in and break their schemas. Any test that imported kubernetes (wiring, the kube
# adapter, the CLI) would leave the next freeze_time in the same process broken.
freezegun.configure(extend_ignore_list=["kubernetes"])
