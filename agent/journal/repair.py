"""What a repair of a damaged journal says of the part it cut."""

from __future__ import annotations

import json


def cut_writes(cut: bytes) -> str:
    """What a repair must say of the part it cut: the writes whose intent (and maybe result) was in it, each named,
    may have taken effect, and the run going on from the cut knows nothing of them and may make them again. Read
    as far as the lines can be (their checksums are not asked: the damaged line itself may name a call)."""
    intents: dict[str, str] = {}
    ran: set[str] = set()
    unread = 0
    for line in filter(None, (raw.strip() for raw in cut.split(b"\n"))):
        try:
            data = json.loads(line)
        except ValueError:
            unread += 1
            continue
        if not isinstance(data, dict):
            unread += 1
        elif data.get("type") == "tool_intent":
            what = json.dumps(data.get("arguments"), ensure_ascii=False)
            intents[str(data.get("call_id"))] = f"{data.get('tool')} {what[:160]}{'...' if len(what) > 160 else ''}"
        elif data.get("type") == "tool_observed" and isinstance(data.get("observation"), dict):
            ran.add(str(data["observation"].get("call_id")))
    if not intents and not unread:
        return ""
    calls = [
        f"call {c} ({what}){', which ran: its result was cut too' if c in ran else ''}" for c, what in intents.items()
    ]
    said = f"; the cut part held {'; '.join(calls)}" if calls else ""
    more = f"; {unread} cut line{'s' if unread > 1 else ''} could not be read and may hold more" if unread else ""
    return (
        f"{said}{more}. Whether these writes took effect cannot be known from the journal, and the resumed run "
        "knows nothing of them: it may make them again. Check the world (the files, the service) before trusting it."
    )
