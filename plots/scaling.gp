# Scaling chart: metric vs threads, one line per variant × placement, error bars = the median's 95% CI
# (min..max below 3 repeats), dashed = ideal linear scaling from each series' smallest thread count
# (rates only). Columns: threads median lo hi ideal clean suspect — a point with a suspect (disturbed)
# repeat has its median in column 7 and is drawn hollow, else in column 6, filled.
# With `panels` (placement names), one panel per placement: blocks starts[p] .. starts[p]+counts[p]-1,
# a variant's colour the same in every panel (`colours`, one per block), one y scale (`ymax`).
# Called by scripts/lab/report/charts.py as `gnuplot -c scaling.gp dat out ext width title ylabel nums panels xr`
# (gnuplot takes 9 arguments at most): nums = "n ideal suspect ymax np starts… counts… colours…",
# panels = the panels' placement names, xr = "lo hi" where every point has one thread count, else "".
# The arguments are strings from a run folder, used only as values (never @macros or eval text).
dat = ARG1; out = ARG2; title = ARG5; ylabel = ARG6; nums = ARG7; panels = ARG8
num(k) = word(nums, k) + 0
n = int(num(1)); ideal = int(num(2)); suspect = int(num(3)); ymax = num(4); np = int(num(5))
if (ARG3 eq "png") { set terminal pngcairo size int(ARG4 + 0),600 } else { set terminal svg size int(ARG4 + 0),600 }
set output out
set xlabel "threads"
set ylabel ylabel noenhanced
set grid
set logscale x 2
set offsets graph 0.05, graph 0.05, graph 0.05, 0
if (words(ARG9) == 2) { set xrange [word(ARG9, 1) + 0:word(ARG9, 2) + 0] }
if (np == 0) {
  set title title noenhanced
  set key outside right top noenhanced
  set yrange [*<0:0<*]   # from 0, or below it for a metric with negative values
  cmd = "plot for [i=0:n-1] dat index i using 1:2 with lines lw 2 lc i+1 title columnheader(1)"
  cmd = cmd . ", for [i=0:n-1] dat index i using 1:2:3:4 with yerrorbars lc i+1 pt -1 notitle"
  cmd = cmd . ", for [i=0:n-1] dat index i using 1:6 with points pt 7 ps 1.2 lc i+1 notitle"
  cmd = cmd . ", for [i=0:n-1] dat index i using 1:7 with points pt 6 ps 1.6 lw 2 lc i+1 notitle"
  if (ideal) { cmd = cmd . ", for [i=0:n-1] dat index i using 1:5 with lines dt 2 lc i+1 notitle" }
  if (suspect) { cmd = cmd . ", keyentry with points pt 6 ps 1.6 lw 2 lc rgb '#444444' title 'hollow: suspect'" }
  cmd = cmd . ", keyentry with yerrorbars pt -1 lc rgb '#444444' title 'bars: 95% CI (n<3: min-max)'"
  eval cmd
} else {
  set yrange [*<0:ymax]
  set multiplot layout 1, np title title noenhanced
  do for [p=1:np] {
    s = int(num(5 + p))
    e = s + int(num(5 + np + p)) - 1
    set title word(panels, p) noenhanced
    # equal panels side by side, the key to the right of the last one
    w = 0.74 / np
    set lmargin at screen 0.10 + (p - 1) * w
    set rmargin at screen 0.10 + p * w - 0.02
    if (p == np) { set key outside right top noenhanced } else { unset key }
    if (p > 1) { unset ylabel; set format y "" }
    cmd = "plot for [i=s:e] dat index i using 1:2 with lines lw 2 lc num(6 + 2 * np + i) title columnheader(1)"
    cmd = cmd . ", for [i=s:e] dat index i using 1:2:3:4 with yerrorbars pt -1 lc num(6 + 2 * np + i) notitle"
    cmd = cmd . ", for [i=s:e] dat index i using 1:6 with points pt 7 ps 1.2 lc num(6 + 2 * np + i) notitle"
    cmd = cmd . ", for [i=s:e] dat index i using 1:7 with points pt 6 ps 1.6 lw 2 lc num(6 + 2 * np + i) notitle"
    if (ideal) { cmd = cmd . ", for [i=s:e] dat index i using 1:5 with lines dt 2 lc num(6 + 2 * np + i) notitle" }
    if (p == np && suspect) { cmd = cmd . ", keyentry with points pt 6 ps 1.6 lw 2 lc rgb '#444444' title 'hollow: suspect'" }
    eval cmd
  }
  unset multiplot
}
