# Bar chart per category (placement), one bar per variant. Whiskers: the median's 95% CI where a point
# has >= 3 repeats, else min..max. A point with a suspect repeat (disturbed measurement) is drawn hollow.
# Data: "category" then per variant four columns: median lo hi suspect(0/1); first row = header.
# Called by scripts/lab/report/charts.py as `gnuplot -c bars.gp dat out ext width title ylabel n suspect`: the
# arguments are strings from a run folder, used only as values (never @macros or eval text).
dat = ARG1; out = ARG2; title = ARG5; ylabel = ARG6; n = int(ARG7 + 0); suspect = int(ARG8 + 0)
if (ARG3 eq "png") { set terminal pngcairo size int(ARG4 + 0),600 } else { set terminal svg size int(ARG4 + 0),600 }
set output out
set title title noenhanced
set ylabel ylabel noenhanced
set key outside right top noenhanced
set grid ytics
set datafile columnheaders
set yrange [*<0:0<*]   # from 0, or below it for a metric with negative values
set xtics noenhanced
bw = 0.8 / n
off(i) = (i - (n - 1) / 2.0) * bw
set boxwidth bw * 0.95
set xrange [-0.6:*]
set offsets 0, 0.5, 0, 0
cmd = "plot for [i=0:n-1] dat using ($0 + off(i)):(column(5+4*i) > 0 ? NaN : column(2+4*i)) with boxes fs solid 0.6 border -1 lc i+1 title columnheader(2+4*i)"
cmd = cmd . ", for [i=0:n-1] dat using ($0 + off(i)):(column(5+4*i) > 0 ? column(2+4*i) : NaN) with boxes fs empty lw 2 lc i+1 notitle"
cmd = cmd . ", for [i=0:n-1] dat using ($0 + off(i)):(column(2+4*i)):(column(3+4*i)):(column(4+4*i)) with yerrorbars lc rgb '#222222' pt -1 ps 0 notitle"
cmd = cmd . ", dat using 0:(NaN):xtic(1) notitle"
if (suspect) { cmd = cmd . ", keyentry with boxes fs empty lc rgb '#444444' lw 2 title 'hollow: suspect'" }
cmd = cmd . ", keyentry with yerrorbars lc rgb '#222222' pt -1 title 'bars: 95% CI (n<3: min-max)'"
eval cmd
