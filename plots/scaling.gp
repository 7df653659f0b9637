# Scaling chart: metric vs threads, one line per variant × placement, error bars = the median's 95% CI
# (min..max below 3 repeats), dashed = ideal linear scaling from each series' smallest thread count
# (rates only). Columns: threads median lo hi ideal clean suspect — a point with a suspect (disturbed)
# repeat has its median in column 7 and is drawn hollow, else in column 6, filled.
# With `panels` (placement names), one panel per placement: blocks starts[p] .. starts[p]+counts[p]-1,
# a variant's colour the same in every panel (`colours`, one per block), one y scale (`ymax`).
# Called by scripts/charts.py with: dat out term title ylabel n ideal panels starts counts colours ymax suspect
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
  cmd = "plot for [i=0:n-1] dat index i using 1:2 with lines lw 2 lc i+1 title columnheader(1)"
  cmd = cmd . ", for [i=0:n-1] dat index i using 1:2:3:4 with yerrorbars lc i+1 pt -1 notitle"
  cmd = cmd . ", for [i=0:n-1] dat index i using 1:6 with points pt 7 ps 1.2 lc i+1 notitle"
  cmd = cmd . ", for [i=0:n-1] dat index i using 1:7 with points pt 6 ps 1.6 lw 2 lc i+1 notitle"
  if (ideal) { cmd = cmd . ", for [i=0:n-1] dat index i using 1:5 with lines dt 2 lc i+1 notitle" }
  if (suspect) { cmd = cmd . ", keyentry with points pt 6 ps 1.6 lw 2 lc rgb '#444444' title 'hollow: suspect'" }
  cmd = cmd . ", keyentry with yerrorbars pt -1 lc rgb '#444444' title 'bars: 95% CI (n<3: min-max)'"
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
    cmd = "plot for [i=s:e] dat index i using 1:2 with lines lw 2 lc (word(colours, i+1)+0) title columnheader(1)"
    cmd = cmd . ", for [i=s:e] dat index i using 1:2:3:4 with yerrorbars pt -1 lc (word(colours, i+1)+0) notitle"
    cmd = cmd . ", for [i=s:e] dat index i using 1:6 with points pt 7 ps 1.2 lc (word(colours, i+1)+0) notitle"
    cmd = cmd . ", for [i=s:e] dat index i using 1:7 with points pt 6 ps 1.6 lw 2 lc (word(colours, i+1)+0) notitle"
    if (ideal) { cmd = cmd . ", for [i=s:e] dat index i using 1:5 with lines dt 2 lc (word(colours, i+1)+0) notitle" }
    if (p == np && suspect) { cmd = cmd . ", keyentry with points pt 6 ps 1.6 lw 2 lc rgb '#444444' title 'hollow: suspect'" }
    eval cmd
  }
  unset multiplot
}
