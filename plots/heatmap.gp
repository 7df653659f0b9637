# Heatmap of a CPU × CPU matrix (e.g. c2c one-way latency), median per pair, blank where unmeasured.
# Lines mark where the L3 domain changes (CPUs in hwloc's logical order).
# Called by scripts/charts.py with: dat out term title ylabel n tics bounds xlab ylab
# (xlab/ylab: the axes, "CPU" for a CPU x CPU matrix, memory and CPU node for a node x node one)
set terminal @term
set output out
set title title noenhanced
set xlabel xlab noenhanced
set ylabel ylab noenhanced
set cblabel ylabel noenhanced
set size ratio -1
set xrange [-0.5:n-0.5]
set yrange [n-0.5:-0.5]
if (n > 12) set xtics rotate by 90 right
eval "set xtics (".tics.")"
eval "set ytics (".tics.")"
do for [b in bounds] {
  set arrow from b, -0.5 to b, n-0.5 nohead lw 2 lc rgb "black" front
  set arrow from -0.5, b to n-0.5, b nohead lw 2 lc rgb "black" front
}
set palette defined (0 "#fff7ec", 1 "#fdbb84", 2 "#d7301f", 3 "#7f0000")
# Values are printed in the cells while they are big enough to read.
cmd = "plot dat using 1:2:3 with image notitle"
# gnuplot's image needs a 2 x 2 grid at least: a one-cell matrix (a one-node host) is drawn as a box
if (n < 2) cmd = "plot dat using 1:2:($1-0.5):($1+0.5):($2-0.5):($2+0.5):3 with boxxy fs solid lc palette notitle"
if (n <= 16) cmd = cmd . ", dat using 1:2:4 with labels notitle"
eval cmd
