"""The custom tool `release_notes` of the digest agent: the titles of the releases published
between two dates, as a JSON list.

The runner harness calls `main` with the arguments AGENT.md declares (`start`, `end`), after
checking that the script imports only the standard library. RELEASES_API_TOKEN is in the
environment of this call only (declared under `secrets:`); the model sees the returned value,
scrubbed, never the token.
"""

import datetime
import json
import os
import urllib.parse
import urllib.request

# A made-up release tracker: the .example top-level domain never resolves.
RELEASES_URL = "https://releases.tracker.example/api/releases"


def main(start, end):
    first = datetime.date.fromisoformat(start)
    last = datetime.date.fromisoformat(end)
    if last < first:
        raise ValueError(f"end {last} is before start {first}")
    query = urllib.parse.urlencode({"from": first.isoformat(), "to": last.isoformat()})
    request = urllib.request.Request(
        f"{RELEASES_URL}?{query}",
        headers={"Authorization": "Bearer " + os.environ["RELEASES_API_TOKEN"]},
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        releases = json.load(response)
    return [release["title"] for release in releases]
