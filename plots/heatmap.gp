# Heatmap of a CPU × CPU matrix (e.g. c2c one-way latency), median per pair, blank where unmeasured, or of
# a CPU node × memory node one (numa-mem). Lines mark where the L3 domain changes (CPUs in hwloc's order).
# Called by scripts/lab/report/charts.py as `gnuplot -c heatmap.gp dat out ext width title ylabel "n axes" cpus bounds`
# (axes: the word cpu or node; cpus: the axis labels in order; bounds: positions of domain lines). The
# arguments are strings from a run folder, used only as values (never @macros or eval text).
dat = ARG1; out = ARG2; title = ARG5; ylabel = ARG6; cpus = ARG8; bounds = ARG9
n = int(word(ARG7, 1) + 0); axes = word(ARG7, 2)
if (ARG3 eq "png") { set terminal pngcairo size int(ARG4 + 0),600 } else { set terminal svg size int(ARG4 + 0),600 }
set output out
set title title noenhanced
if (axes eq "node") { set xlabel "memory node"; set ylabel "CPU node" } else { set xlabel "CPU"; set ylabel "CPU" }
set cblabel ylabel noenhanced
set size ratio -1
set xrange [-0.5:n-0.5]
set yrange [n-0.5:-0.5]
if (n > 12) set xtics rotate by 90 right
set xtics () ; set ytics ()
do for [i=1:words(cpus)] { set xtics add (word(cpus, i) i-1); set ytics add (word(cpus, i) i-1) }
do for [b in bounds] {
  x = b + 0
  set arrow from x, -0.5 to x, n-0.5 nohead lw 2 lc rgb "black" front
  set arrow from -0.5, x to n-0.5, x nohead lw 2 lc rgb "black" front
}
set palette defined (0 "#fff7ec", 1 "#fdbb84", 2 "#d7301f", 3 "#7f0000")
# Values are printed in the cells while they are big enough to read. The command text is fixed here:
# no argument is part of it.
cmd = "plot dat using 1:2:3 with image notitle"
# gnuplot's image needs a 2 x 2 grid at least: a one-cell matrix (a one-node host) is drawn as a box
if (n < 2) cmd = "plot dat using 1:2:($1-0.5):($1+0.5):($2-0.5):($2+0.5):3 with boxxy fs solid lc palette notitle"
if (n <= 16) cmd = cmd . ", dat using 1:2:4 with labels notitle"
eval cmd
