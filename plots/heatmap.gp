# Heatmap of a CPU × CPU matrix (e.g. c2c one-way latency), median per pair, blank where unmeasured.
# Called by scripts/charts.py with: dat out term title ylabel n tics
set terminal @term
set output out
set title title noenhanced
set xlabel "CPU"
set ylabel "CPU"
set cblabel ylabel noenhanced
set size ratio -1
set xrange [-0.5:n-0.5]
set yrange [n-0.5:-0.5]
eval "set xtics (".tics.")"
eval "set ytics (".tics.")"
set palette defined (0 "#fff7ec", 1 "#fdbb84", 2 "#d7301f", 3 "#7f0000")
plot dat using 1:2:3 with image notitle, \
     (n <= 16 ? dat : NaN) using 1:2:(sprintf("%.0f", $3)) with labels notitle
