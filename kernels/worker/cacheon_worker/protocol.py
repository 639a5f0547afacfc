"""Worker protocol plumbing: the request, progress lines and result files.

The controller writes one JSON request to the worker's stdin and reads the
result file the worker leaves in its work directory after the process has
exited. Progress lines (one JSON object per line, appended to
progress.jsonl) say how far the worker got, so a crash or a timeout can be
attributed to a case and a call. Nothing is read from stdout: candidate
code may print whatever it likes there.
"""

import json
import os
import sys
import time

PROTOCOL = "cacheon-worker-v2"
RESULT_FILE = "result.json"
PROGRESS_FILE = "progress.jsonl"


class ProtocolError(Exception):
    """The request is malformed; the worker exits with code 3."""


def read_request(stream=None):
    stream = stream or sys.stdin
    raw = stream.read()
    try:
        req = json.loads(raw)
    except ValueError as e:
        raise ProtocolError(f"request is not JSON: {e}") from None
    if not isinstance(req, dict):
        raise ProtocolError("request must be a JSON object")
    if req.get("protocol") != PROTOCOL:
        raise ProtocolError(f"protocol {req.get('protocol')!r}, this worker speaks {PROTOCOL!r}")
    for key in ("role", "work_dir"):
        if key not in req:
            raise ProtocolError(f"request lacks {key!r}")
    # The slot contracts come from the controller's catalog; a worker never
    # falls back to contracts of its own.
    if req["role"] == "plan":
        contracts = req.get("contracts")
        if not isinstance(contracts, list) or not all(isinstance(c, dict) and isinstance(c.get("slot"), str)
                                                      for c in contracts):
            raise ProtocolError("a plan request needs 'contracts': a list of slot contracts, each naming its 'slot'")
    elif req["role"] == "audit":
        contracts = req.get("contracts")
        if not isinstance(contracts, list) or not contracts or not all(isinstance(c, dict) for c in contracts):
            raise ProtocolError("an audit request needs 'contracts': the catalog's contracts of the expected slots")
    elif req["role"] in ("candidate", "reference", "checker"):
        if not isinstance(req.get("contract"), dict):
            raise ProtocolError(f"a {req['role']} request needs 'contract': the catalog's contract of its slot")
    return req


def write_json_atomic(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True, allow_nan=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Progress:
    """Append-only progress log; each line is written with one unbuffered
    write so it survives a crash of the process right after."""

    def __init__(self, work_dir):
        self._fd = os.open(os.path.join(work_dir, PROGRESS_FILE), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._t0 = time.monotonic()

    def __call__(self, stage, **fields):
        line = {"stage": stage, "t": round(time.monotonic() - self._t0, 4)}
        line.update(fields)
        os.write(self._fd, (json.dumps(line, sort_keys=True) + "\n").encode())
