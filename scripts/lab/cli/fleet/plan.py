"""fleet plan: the dry run of the sweep (./lab sweep dry=1) on each host's fetched topology, priced from that
host's history (a summary that is not one is refused by the host's name: that host is priced from the specs'
cost), and the fleet's ETA (the hosts measure at once: the slowest host's)."""
import os
import sys

from lab.cli.fleet.check import read_hosts
from lab.cli.fleet.common import hosts_of, say, table
from lab.core.runfolder import results_dir, stamp_now, writing
from lab.core.term import visible
from lab.engine import api
from lab.engine.price import hms
from lab.engine.pricehistory import HistoryError
from lab.engine.pricehistory import load as load_history


def dry_run(xml, history, args, path):
    """The dry run of the sweep on a host's fetched topology, priced from its history (in-process,
    lab/engine/api.py), written to path as the host's dry-run.txt; its price.Price. Bad arguments: EngineError."""
    req = api.request(["dry=1", f"topology={xml}", *([f"history={history}"] if history else []), *args])
    with writing(path) as g:
        return api.dry_run(req, g)


def host_history(h, r):
    """(the host's summary to price from or None, a note when it has none); a summary that is not one is
    refused here, by the host's name, and the host priced from the specs' cost."""
    if not r.get("history"):
        return None, f"no history: {r.get('history_error') or 'not read'}"
    try:
        load_history(r["history"], label=f"{h}: its history summary")
    except HistoryError as e:
        print(f"fleet: {visible(str(e))}", file=sys.stderr)
        return None, "history refused"
    return r["history"], ""


def prices(h, price, note):
    """Where a host's seconds per run came from: its price's sources per experiment."""
    found = [x.source for x in price.experiments]
    mine = sum(1 for x in found if x.startswith("history of "))
    if found and mine == len(found):
        return f"history of {h}"
    cost = f"spec cost ({note or 'no earlier run of these there'})"
    return f"history of {h} ({mine} of {len(found)} experiments), {cost}" if mine else cost


def main(keys, args, env):
    hosts = hosts_of(keys, env)
    out = os.path.join(results_dir(), f"fleet-hosts-{stamp_now()}")
    found = read_hosts(keys, hosts, env, out)
    rows, worst = [], None
    total_points = 0
    for h, r in found.items():
        if not r["xml"]:
            rows.append([h, "–", "–", "–", "–", r["status"] if r["status"] != "ok" else r["shape"]])
            continue
        history, note = host_history(h, r)
        price = dry_run(r["xml"], history, args, os.path.join(out, h, "dry-run.txt"))
        total_points += price.points
        if worst is None or price.expected > worst[0]:
            worst = (price.expected, h)
        rows.append([h, str(price.points), hms(price.expected),
                     f"{hms(price.fewest)} – {hms(price.most)}" if price.fewest != price.most else "–",
                     prices(h, price, note), "history refused" if note == "history refused" else "ok"])
    say(table(["host", "points", "ETA", "range", "prices from", "status"], rows))
    if worst:
        say(f"fleet: {total_points} points on {sum(1 for r in rows if r[1] != '–')} host(s), ETA {hms(worst[0])} "
            f"(the hosts measure at once: the slowest is {worst[1]}); each host's dry run: {out}/<host>/dry-run.txt")
    return 0 if all(r[5] == "ok" for r in rows) else 1
