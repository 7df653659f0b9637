# Scaling chart: metric vs threads, one line per variant × placement, error bars = min..max over
# repeats, dashed = ideal linear scaling from each series' smallest thread count (rates only).
# Called by scripts/charts.py with: dat out term title ylabel n ideal
set terminal @term
set output out
set title title noenhanced
set xlabel "threads"
set ylabel ylabel noenhanced
set key outside right top noenhanced
set grid
set logscale x 2
set yrange [0:*]
set offsets graph 0.05, graph 0.05, graph 0.05, 0
cmd = "plot for [i=0:n-1] dat index i using 1:2:3:4 with yerrorlines lw 2 lc i+1 title columnheader(1)"
if (ideal) cmd = cmd . ", for [i=0:n-1] dat index i using 1:5 with lines dt 2 lc i+1 notitle"
eval cmd
