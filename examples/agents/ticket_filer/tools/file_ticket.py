"""The custom tool `file_ticket`: files one ticket and returns its number.

It applies a change (a public_egress agent's tool that does not say `applies: false`), so
the workflow may use this agent only in a step that is itself a gate.
"""

import json
import os
import urllib.request

# A made-up issue tracker: the .example top-level domain never resolves.
TRACKER_URL = "https://tracker.example/api/tickets"


def main(title, body):
    request = urllib.request.Request(
        TRACKER_URL,
        data=json.dumps({"title": title, "body": body}).encode("utf-8"),
        method="POST",
        headers={
            "Authorization": "Bearer " + os.environ["TRACKER_TOKEN"],
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        return {"ticket": json.load(response)["number"]}
