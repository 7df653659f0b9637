"""An Imported (model.py) as a new run folder of the lab's layout (docs/design.md "Imported runs"):
data/<exp>.csv in the tidy schema, env/ with what the file says of its machine (marked as the file's),
env/imported.json (format, file, sha256, charts), raw/<exp>/imported/ holding the file as received,
sweep/journal.jsonl with one `imported` event and sweep/state `imported`. Everything is checked before
anything is written, and the folder appears by a rename when whole: bad input leaves no run folder."""
import hashlib
import json
import os
import shutil
import time

from lab.core.runfolder import IMPORT_RECORD, RunFolder, RunFolderError, import_record, results_dir, run_name, stamp_now
from lab.core.term import visible
from lab.core.tidy import write_atomic
from lab.topology.topo import PlacementError, Topology, xml_text

from .jsonfile import BadInput
from .model import slug

LABEL = "imported"
TOOLS = {"hyperfine": "hyperfine JSON", "gbench": "Google Benchmark JSON", "pyperf": "pyperf JSON"}


def new_dest(host):
    """results/<UTC stamp>-imported-<host>: the file's machine stands where a host's name would."""
    stamp = stamp_now()
    for n in range(1, 1000):
        path = os.path.join(results_dir(), run_name(stamp, slug(host, "unknown-host"), LABEL, n))
        if not os.path.exists(path):
            return path
    raise BadInput(f"{results_dir()}: no free run folder name")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def machine_text(imp, path):
    """env/imported-machine.txt: the file's own words on its machine, one key=value a line, visible."""
    head = (f"# what {os.path.basename(path)} ({imp.format}) says of the machine it measured on: the file's "
            "word, not captured by this lab\n")
    return head + "".join(f"{k}={visible(str(v))[:1000]}\n" for k, v in imp.machine.items() if v not in (None, ""))


def short(text):
    """A text field of the record as its reader takes it (runfolder.import_record: at most 1000 characters)."""
    text = str(text)
    return text if len(text) <= 1000 else text[:990] + " …(cut)"


def record(imp, path, topology):
    rec = {"format": imp.format, "format_version": imp.version, "file": os.path.basename(path),
            "sha256": sha256(path), "source": f"{TOOLS.get(imp.format, imp.format)} file {os.path.basename(path)}",
            "cpu": str(imp.machine.get("cpu_model_name") or imp.machine.get("cpu_model_str")
                       or imp.machine.get("cpu") or "CPU not stated by the file"),
            "host": imp.host, "topology": (os.path.basename(topology) if topology and os.path.exists(topology)
                                           else topology or ""),
            "machine": {k: str(v) for k, v in imp.machine.items() if v not in (None, "")},
            "charts": [[exp, kind, metric] for exp, cs in imp.charts.items() for kind, metric in cs],
            **imp.extra}
    return {k: short(v) if isinstance(v, str) else v for k, v in rec.items()}


def write_run(dest, imp, path, topology=None, shown=""):
    """Import into the new run folder `dest` (None: a new one under results/); returns its path."""
    topo_xml = None
    if topology:
        try:
            topo_xml = (Topology(topology), xml_text(topology))
        except PlacementError as e:
            raise BadInput(f"topology: {e}".replace("\n", "; ")) from None
    dest = os.path.abspath(dest or new_dest(imp.host or imp.default_name))
    if os.path.exists(dest):
        raise BadInput(f"{dest} exists already: an import writes a new run folder")
    parent = os.path.dirname(dest)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".tmp-import-{os.getpid()}-{os.path.basename(dest)}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _fill(RunFolder(tmp), os.path.basename(dest), imp, path, topology, topo_xml, shown)
        try:    # what was written, read back as the lab's readers will: a record they refuse is not left behind
            import_record(tmp)
        except RunFolderError as e:
            raise BadInput(f"{path}: the import's record would not be readable: {e}") from None
        os.rename(tmp, dest)
    except RunFolderError as e:         # e.g. more rows than the readers accept: nothing is left behind
        raise BadInput(str(e)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _fill(rf, run_id, imp, path, topology, topo_xml, shown):
    rf.make()
    os.makedirs(rf.env_dir)
    for exp, rows in imp.rows.items():
        write_atomic(rf.data_csv(exp), [dict(r, run_id=run_id) for r in rows])
    first = next(iter(imp.rows))
    raw = rf.raw(first, LABEL)
    os.makedirs(raw)
    shutil.copyfile(path, os.path.join(raw, "received.json"))
    rec = record(imp, path, topology)
    for name, text in imp.env_files.items():
        rf.write_text(f"env/{name}", text)
    rf.write_text("env/imported-machine.txt", machine_text(imp, path))
    if topo_xml:
        topo, xml = topo_xml
        rf.write_text("env/lstopo.xml", xml)
        rf.write_text("env/topology.txt", "".join(f"{k}={v}\n" for k, v in topo.shape().items()))
    rf.write_text(IMPORT_RECORD, json.dumps(rec, indent=1) + "\n")
    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    event = {"ts": ts, "event": "imported", "experiment": first, "experiments": list(imp.rows),
             **{k: rec[k] for k in ("format", "format_version", "file", "sha256", "source", "cpu")}}
    rf.write_text(os.path.relpath(rf.journal_path, rf.path), json.dumps(event) + "\n")
    rf.set_state("imported")
    rf.write_text(os.path.relpath(rf.sweep_file("command"), rf.path), shown + "\n")
