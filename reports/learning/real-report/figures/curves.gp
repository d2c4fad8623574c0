# Learning curves (runs of no thesis table, e.g. reports/learning/): validation and training F1 against the step
# Written by `mare report`. Data: curves.dat, one block per series (blocks separated by two blank lines, selected with `index`).
# Re-plot in this directory with `gnuplot -d curves.gp`: writes curves.png and curves.svg.
DAT = "curves.dat"
do for [fmt in "png svg"] {
reset
if (fmt eq "png") {
  set terminal pngcairo size 2200,1440 font "DejaVu Sans,12" fontscale 2 linewidth 2 noenhanced
  set output "curves.png"
} else {
  set terminal svg size 1100,720 font "DejaVu Sans,12" linewidth 1 noenhanced
  set output "curves.svg"
}
set encoding utf8
set style line 1 lc rgb "#000000" lw 2 dt 1 pt 7 ps 1.3
set style line 2 lc rgb "#0072B2" lw 2 dt (10,5) pt 5 ps 1.3
set style line 3 lc rgb "#D55E00" lw 2 dt (2,4) pt 9 ps 1.3
set style line 4 lc rgb "#009E73" lw 2 dt (10,4,2,4) pt 13 ps 1.3
set style line 5 lc rgb "#CC79A7" lw 2 dt (18,6,4,6,4,6) pt 6 ps 1.3
set style line 6 lc rgb "#E69F00" lw 2 dt 1 pt 4 ps 1.3
set style line 7 lc rgb "#56B4E9" lw 2 dt (10,5) pt 8 ps 1.3
set border 3 lw 1
set tics nomirror out
set grid lc rgb "#d0d0d0" lw 1 dt 1
set key box lc rgb "#a0a0a0" samplen 3 spacing 1.1
set xlabel "training step"
set yrange [0:1]
set multiplot layout 2,1 title "Runs: relation F1 against the step (validation solid, band from the lowest to the highest seed; training sample dashed)"
set ylabel "F1 (official: document-level triples)"
set title "learning-real-cdr on cdr"
set rmargin at screen 0.7363636363636363
set key outside right top vertical Left reverse maxrows 5 box lc rgb "#a0a0a0"
plot DAT index 0 using 1:3:4 with filledcurves ls 1 fs transparent solid 0.15 noborder notitle, \
     DAT index 0 using 1:2 with linespoints ls 1 dt 1 title "NTCRE-CPD (1 seed)", \
     DAT index 1 using 1:2 with lines ls 1 dt 2 notitle, \
     DAT index 2 using 1:3:4 with filledcurves ls 2 fs transparent solid 0.15 noborder notitle, \
     DAT index 2 using 1:2 with linespoints ls 2 dt 1 title "UTRE-CPD (1 seed)", \
     DAT index 3 using 1:2 with lines ls 2 dt 2 notitle, \
     DAT index 4 using 1:3:4 with filledcurves ls 3 fs transparent solid 0.15 noborder notitle, \
     DAT index 4 using 1:2 with linespoints ls 3 dt 1 title "bran (1 seed)", \
     DAT index 5 using 1:2 with lines ls 3 dt 2 notitle, \
     DAT index 6 using 1:3:4 with filledcurves ls 4 fs transparent solid 0.15 noborder notitle, \
     DAT index 6 using 1:2 with linespoints ls 4 dt 1 title "cnn (1 seed)", \
     DAT index 7 using 1:2 with lines ls 4 dt 2 notitle, \
     0.32946994282182046 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
set ylabel "macro F1 (official)"
set title "learning-real-semeval on semeval2018"
set rmargin at screen 0.7363636363636363
set key outside right top vertical Left reverse maxrows 4 box lc rgb "#a0a0a0"
plot DAT index 8 using 1:3:4 with filledcurves ls 5 fs transparent solid 0.15 noborder notitle, \
     DAT index 8 using 1:2 with linespoints ls 5 dt 1 title "NTCRE-CPD (1 seed)", \
     DAT index 9 using 1:2 with lines ls 5 dt 2 notitle, \
     DAT index 10 using 1:3:4 with filledcurves ls 6 fs transparent solid 0.15 noborder notitle, \
     DAT index 10 using 1:2 with linespoints ls 6 dt 1 title "UTRE-CPD (1 seed)", \
     DAT index 11 using 1:2 with lines ls 6 dt 2 notitle, \
     DAT index 12 using 1:3:4 with filledcurves ls 7 fs transparent solid 0.15 noborder notitle, \
     DAT index 12 using 1:2 with linespoints ls 7 dt 1 title "bran (1 seed)", \
     DAT index 13 using 1:2 with lines ls 7 dt 2 notitle, \
     0.11006289308176101 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
unset multiplot
unset output
}
