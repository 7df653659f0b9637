# Bar chart per category (placement), one bar per variant, error bars = min..max over repeats.
# Called by scripts/charts.py with: dat out term title ylabel n
set terminal @term
set output out
set title title noenhanced
set ylabel ylabel noenhanced
set key outside right top noenhanced
set grid ytics
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.6 border -1
set yrange [0:*]
set xtics noenhanced
plot for [i=0:n-1] dat using (column(2+3*i)):(column(3+3*i)):(column(4+3*i)):xtic(1) title columnheader(2+3*i)
