"""The fleet folder results/fleet-<UTC time>/: fleet.json (what was asked, the code, each host's job and
state), ansible.log, the code archive, and one fetched run folder per host (<host>/). Rerunning the same
fleet-sweep (same inventory, hosts, arguments and code) resumes the newest unfinished one."""
import json
import os
import shutil
import tarfile

from lab.core.archive import ArchiveError, members_of
from lab.core.runfolder import stamp_now, write_atomic_text
from lab.errors import LabError

STATE = "fleet.json"


def load(folder):
    with open(os.path.join(folder, STATE)) as f:
        return json.load(f)


def save(folder, state):
    write_atomic_text(os.path.join(folder, STATE), json.dumps(state, indent=1, sort_keys=True))


def find_or_new(results, signature):
    """(folder, state, resumed): the newest unfinished fleet folder of this signature, or a new one."""
    if os.path.isdir(results):
        for name in sorted(os.listdir(results), reverse=True):
            d = os.path.join(results, name)
            if not name.startswith("fleet-") or not os.path.isfile(os.path.join(d, STATE)):
                continue
            try:
                st = load(d)
            except (OSError, ValueError):
                continue
            if st.get("signature") == signature and st.get("state") != "complete":
                return d, st, True
    os.makedirs(results, exist_ok=True)
    stamp = stamp_now()
    for n in range(1, 100):
        d = os.path.join(results, f"fleet-{stamp}" + (f".{n}" if n > 1 else ""))
        try:
            os.makedirs(d)
            return d, {"signature": signature, "stamp": stamp + (f".{n}" if n > 1 else ""), "jobs": {},
                       "hosts_state": {}, "state": "running"}, False
        except FileExistsError:
            continue
    raise OSError(f"cannot create a fleet folder in {results}")


class FetchError(LabError):
    pass


def unpack(tgz, dest, max_bytes=20 << 30):
    """A host's packed run folder into dest/ (replacing what an earlier fetch left): regular files and
    folders only, all under one top folder, at most max_bytes (a run folder is data, never links)."""
    tmp = dest + ".unpacking"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(tgz, "r:gz") as t:
        # the archive's own rules (archive.py): plain files and folders under one top, none sparse, none
        # twice, bounded in size and count
        try:
            _members, top = members_of(tgz, t, max_total=max_bytes)
        except ArchiveError as e:
            raise FetchError(str(e)) from None
        # Members were checked above; the "data" filter (Python ≥ 3.11.4) also drops modes it should not keep.
        if hasattr(tarfile, "data_filter"):
            t.extractall(tmp, filter="data")
        else:
            t.extractall(tmp)
    top = os.path.join(tmp, top)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(top, dest)
    shutil.rmtree(tmp, ignore_errors=True)
