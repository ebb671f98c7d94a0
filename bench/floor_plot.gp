# kvroute bench: one plot of an issue #18 floor (called by bench/floor_tables.js).
# Variables, set with gnuplot -e "...":
#   datafile   whitespace-separated: index, point label ("6w/24/c16"), then one
#              column a policy (quoted headers in line 1); NaN marks a missing value
#   ncols      the number of columns
#   outfile, plottitle, ylab, yr (e.g. "[0:2]"), floor (the floor's line), logy (1: log y)

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1100,560 enhanced font "Sans,10"
} else {
    set terminal png size 1100,560
}
set output outfile
set key outside right top box noenhanced
set grid ytics
set title plottitle noenhanced
set xlabel "point (workers / prefix types / concurrency)"
set ylabel ylab
eval "set yrange " . yr
if (logy) { set logscale y; set ytics (0.25, 0.5, 1, 2, 4, 8) }
set xtics rotate by -60 font ",8" noenhanced
set xrange [0:*]
set offsets 0.5, 0.5, 0, 0
set arrow from graph 0, first floor to graph 1, first floor nohead dt 2 lc rgb "red" lw 1.5

# a colour a column, past the default cycle of eight (one repeated
# colour made two policies look alike)
array colours[12] = ["#9400d3", "#009e73", "#56b4e9", "#e69f00", "#f0e442", "#0072b2", \
    "#e51e10", "#000000", "#cc79a7", "#8b4513", "#808080", "#2e8b57"]

# a missing value (NaN) breaks the line rather than joining its neighbours
plot for [i=3:ncols] datafile using 1:i:xtic(2) with linespoints lw 1.5 pt (i - 2) \
    lc rgb colours[(i - 3) % 12 + 1] title columnheader(i)
