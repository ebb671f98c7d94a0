# kvroute bench: one grid plot (called by bench/grid.js, one run per PNG).
# Variables, set with gnuplot -e "...":
#   datafile   whitespace-separated table, quoted column headers in line 1:
#              x (prefix types), nmeasured measured routers (solid),
#              nseed seed variants (dashed), then the upper bound (dotted)
#              if hasbound is 1; "?" marks a missing point
#   measuredcolors one colour per measured column, space-separated
#   seedcolors one colour name per seed column, space-separated
#   outfile, plottitle, ylab, yr (e.g. "[0:105]"), xtics (e.g. "(2, 7, 12, 24)")

if (!exists("seedcolors")) seedcolors = "gray30 red orange gray60"
if (!exists("measuredcolors")) measuredcolors = "#9400d3 #009e73 #56b4e9 #0072b2 #e69f00 #cc79a7"

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 900,560 enhanced font "Sans,11"
} else {
    set terminal png size 900,560
}
set output outfile
set datafile missing "?"
set key outside right top box noenhanced
set grid ytics
set title plottitle noenhanced
set xlabel "prefix types"
set ylabel ylab
eval "set yrange " . yr
eval "set xtics " . xtics
set xrange [0:*]
set offsets 0, 1, 0, 0

first_seed = nmeasured + 2
last_seed = nmeasured + nseed + 1
bound_col = last_seed + 1

# measured routers solid, seed curves dashed in their own colours, the
# upper bound dotted black
plot for [i=2:nmeasured+1] datafile using 1:i with linespoints \
        lw 2 pt 7 ps 1.2 dt 1 lc rgb word(measuredcolors, i - 1) \
        title columnheader(i), \
     for [i=first_seed:last_seed] datafile using 1:i with linespoints \
        lw 2 pt 6 ps 1.0 dt 2 lc rgb word(seedcolors, i - first_seed + 1) \
        title columnheader(i), \
     for [i=bound_col:(hasbound ? bound_col : 0)] datafile using 1:i \
        with lines lw 2 dt 3 lc rgb "black" title columnheader(i)
