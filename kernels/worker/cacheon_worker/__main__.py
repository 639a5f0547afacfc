"""Entry point: python -m cacheon_worker < request.json

Exit codes: 0 the role ran and wrote its result (a failing candidate is
still exit 0: the verdict is in the result), 3 a malformed request,
4 the harness itself failed (result.json may hold the error).
"""

import os
import sys
import traceback


def main() -> int:
    from .protocol import PROTOCOL, RESULT_FILE, Progress, ProtocolError, read_request, write_json_atomic
    try:
        req = read_request()
    except ProtocolError as e:
        print(f"cacheon_worker: {e}", file=sys.stderr)
        return 3
    work_dir = req["work_dir"]
    os.makedirs(work_dir, exist_ok=True)
    progress = Progress(work_dir)
    role = req["role"]
    progress("start", role=role, pid=os.getpid())
    try:
        if role == "plan":
            from . import plan as impl
        elif role == "candidate":
            from . import candidate as impl
        elif role == "reference":
            from . import reference as impl
        elif role == "audit":
            from . import audit as impl
        elif role == "checker":
            from . import checker as impl
        else:
            print(f"cacheon_worker: unknown role {role!r}", file=sys.stderr)
            return 3
        result = impl.run(req, progress)
        if role != "candidate":  # the candidate role writes its record as it goes
            write_json_atomic(os.path.join(work_dir, RESULT_FILE), result)
        progress("exit", code=0)
        return 0
    except Exception as e:
        tb = traceback.format_exc()
        progress("harness_error", error=f"{type(e).__name__}: {e}"[:2000])
        print(tb, file=sys.stderr)
        if role != "candidate":
            try:
                write_json_atomic(os.path.join(work_dir, RESULT_FILE),
                                  {"protocol": PROTOCOL, "role": role, "harness_error": f"{type(e).__name__}: {e}",
                                   "traceback": tb[-4000:]})
            except OSError:
                pass
        return 4


if __name__ == "__main__":
    sys.exit(main())
