# Scaling chart: metric vs threads, one line per variant × placement, error bars = min..max over
# repeats, dashed = ideal linear scaling from each series' smallest thread count (rates only).
# With `panels` (placement names), one panel per placement: blocks starts[p] .. starts[p]+counts[p]-1,
# a variant's colour the same in every panel (`colours`, one per block), one y scale (`ymax`).
# Called by scripts/charts.py with: dat out term title ylabel n ideal panels starts counts colours ymax
set terminal @term
set output out
set xlabel "threads"
set ylabel ylabel noenhanced
set grid
set logscale x 2
set offsets graph 0.05, graph 0.05, graph 0.05, 0
if (strlen(panels) == 0) {
  set title title noenhanced
  set key outside right top noenhanced
  set yrange [0:*]
  cmd = "plot for [i=0:n-1] dat index i using 1:2:3:4 with yerrorlines lw 2 lc i+1 title columnheader(1)"
  if (ideal) { cmd = cmd . ", for [i=0:n-1] dat index i using 1:5 with lines dt 2 lc i+1 notitle" }
  eval cmd
} else {
  np = words(panels)
  set yrange [0:ymax + 0]
  set multiplot layout 1, np title title noenhanced
  do for [p=1:np] {
    s = word(starts, p) + 0
    e = s + word(counts, p) - 1
    set title word(panels, p) noenhanced
    # equal panels side by side, the key to the right of the last one
    w = 0.74 / np
    set lmargin at screen 0.10 + (p - 1) * w
    set rmargin at screen 0.10 + p * w - 0.02
    if (p == np) { set key outside right top noenhanced } else { unset key }
    if (p > 1) { unset ylabel; set format y "" }
    cmd = "plot for [i=s:e] dat index i using 1:2:3:4 with yerrorlines lw 2 lc (word(colours, i+1)+0) title columnheader(1)"
    if (ideal) { cmd = cmd . ", for [i=s:e] dat index i using 1:5 with lines dt 2 lc (word(colours, i+1)+0) notitle" }
    eval cmd
  }
  unset multiplot
}
