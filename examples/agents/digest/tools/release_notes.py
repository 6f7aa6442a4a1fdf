"""Prints the titles of releases published between two dates, as a JSON list.

Reads its arguments as a JSON object on standard input: {"start": "YYYY-MM-DD", "end": "YYYY-MM-DD"}.
Needs the RELEASES_API_TOKEN secret and public internet access (both declared in AGENT.md).
"""

import datetime
import json
import os
import sys
import urllib.parse
import urllib.request

# A made-up release tracker: the .example top-level domain never resolves.
RELEASES_URL = "https://releases.tracker.example/api/releases"


def main():
    arguments = json.load(sys.stdin)
    start = datetime.date.fromisoformat(arguments["start"])
    end = datetime.date.fromisoformat(arguments["end"])
    if end < start:
        raise SystemExit(f"end {end} is before start {start}")
    query = urllib.parse.urlencode({"from": start.isoformat(), "to": end.isoformat()})
    request = urllib.request.Request(
        f"{RELEASES_URL}?{query}",
        headers={"Authorization": "Bearer " + os.environ["RELEASES_API_TOKEN"]},
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        releases = json.load(response)
    json.dump([release["title"] for release in releases], sys.stdout)


if __name__ == "__main__":
    main()
