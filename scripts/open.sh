#!/usr/bin/env bash
# Print the path of a run's report.html (the newest run when none is given) and open it in a browser
# where a desktop session exists. The page is redrawn from the run's data first: a run folder may
# come from someone else, and the report.html it carries is theirs, not one this lab drew.
#   scripts/open.sh [RUN]      RUN: a run folder or a name under results/ (another .html page is not opened: it cannot be redrawn here)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# the lab's Python package (scripts/lab/), for the programs run below as python3 -m lab.cli.X
export PYTHONPATH="$root/scripts${PYTHONPATH:+:$PYTHONPATH}"
results=${LAB_RESULTS:-$root/results}

target=${1:-}
if [[ -z $target ]]; then
  # the newest run folder that has a report (run names start with a UTC timestamp)
  for d in "$results"/*/; do
    [[ -f $d/report.html ]] && target=${d%/}
  done
  [[ -n $target ]] || { echo "open: no run with a report.html in $results (run ./lab sweep first)" >&2; exit 2; }
elif [[ ! -e $target && -e $results/$target ]]; then
  target=$results/$target
fi
if [[ -d $target ]]; then
  page=$target/report.html
elif [[ -f $target && $(basename "$target") == report.html && -d $(dirname "$target")/sweep ]]; then
  target=$(dirname "$target")
  page=$target/report.html
elif [[ -f $target && $target == *.html ]]; then
  # a page outside a run folder cannot be redrawn here, and one from elsewhere runs its own scripts
  echo "open: not opening $(printf '%q' "$target") as it is: the lab cannot redraw a page outside a run folder; open its run folder, or redraw a comparison with ./lab compare A B" >&2
  exit 2
else
  echo "open: $(printf "%q" "$target") is neither a run folder nor a page the lab can redraw" >&2
  exit 2
fi
# a run folder's name is shown through the lab's one rule for text on the terminal (lab.core.term.visible):
# an ESC in it is written \x1b, never obeyed
visible() { python3 -c 'import sys; from lab.core.term import visible; print(visible(sys.argv[1]))' "$1"; }
if [[ -d $target ]]; then
  python3 -m lab.cli.report "$target" || { echo "open: cannot redraw $(visible "$page") from the run's data (above)" >&2; exit 2; }
fi
page=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
visible "$page"
if [[ -n ${DISPLAY:-}${WAYLAND_DISPLAY:-} ]] && command -v xdg-open >/dev/null; then
  xdg-open "$page" >/dev/null 2>&1 &
fi
