"""The lab's record of what happened on each host: one JSON line per task result in the file named by
$LAB_FLEET_STATUS (host, task, status ok|failed|unreachable|skipped, a short message). scripts/lab/cli/fleet/
reads it to say which host failed or could not be reached, and why, without parsing Ansible's text.
Only the message, rc and the last stderr line are kept, never a whole result (it may hold facts or
variables); results of no_log tasks arrive here already censored by Ansible."""
import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: lab_status
type: aggregate
short_description: one JSON line per host and task, for the scaling lab's fleet recipes
description: Writes each task result's host, task name, status and a short message to $LAB_FLEET_STATUS.
requirements: [enabled in callbacks_enabled]
"""

MAX_MSG = 400


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "lab_status"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.path = os.environ.get("LAB_FLEET_STATUS")

    def _write(self, result, status):
        if not self.path:
            return
        r = result._result if isinstance(result._result, dict) else {}
        msg = r.get("msg") or ""
        stderr = (r.get("stderr") or "").strip().splitlines()
        if not msg and stderr:
            msg = stderr[-1]
        rec = {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": result._host.get_name(),
               "task": result._task.get_name(), "status": status, "msg": str(msg)[:MAX_MSG]}
        if isinstance(r.get("rc"), int):
            rec["rc"] = r["rc"]
        with open(self.path, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def v2_runner_on_ok(self, result):
        self._write(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(result, "ignored" if ignore_errors else "failed")

    def v2_runner_on_unreachable(self, result):
        self._write(result, "unreachable")

    def v2_runner_on_skipped(self, result):
        self._write(result, "skipped")
