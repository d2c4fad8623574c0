# Learning curves (runs of no thesis table, e.g. reports/learning/): validation and training F1 against the step
# Written by `mare report`. Data: curves.dat, one block per series (blocks separated by two blank lines, selected with `index`).
# Re-plot in this directory with `gnuplot -d curves.gp`: writes curves.png and curves.svg.
DAT = "curves.dat"
do for [fmt in "png svg"] {
reset
if (fmt eq "png") {
  set terminal pngcairo size 2200,5520 font "DejaVu Sans,12" fontscale 2 linewidth 2 noenhanced
  set output "curves.png"
} else {
  set terminal svg size 1100,2760 font "DejaVu Sans,12" linewidth 1 noenhanced
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
set style line 8 lc rgb "#7F7F7F" lw 2 dt (2,4) pt 12 ps 1.3
set style line 9 lc rgb "#000000" lw 2 dt (10,4,2,4) pt 2 ps 1.3
set style line 10 lc rgb "#0072B2" lw 2 dt (18,6,4,6,4,6) pt 3 ps 1.3
set style line 11 lc rgb "#D55E00" lw 2 dt 1 pt 7 ps 1.3
set style line 12 lc rgb "#009E73" lw 2 dt (10,5) pt 5 ps 1.3
set style line 13 lc rgb "#CC79A7" lw 2 dt (2,4) pt 9 ps 1.3
set style line 14 lc rgb "#E69F00" lw 2 dt (10,4,2,4) pt 13 ps 1.3
set style line 15 lc rgb "#56B4E9" lw 2 dt (18,6,4,6,4,6) pt 6 ps 1.3
set style line 16 lc rgb "#7F7F7F" lw 2 dt 1 pt 4 ps 1.3
set style line 17 lc rgb "#000000" lw 2 dt (10,5) pt 8 ps 1.3
set style line 18 lc rgb "#0072B2" lw 2 dt (2,4) pt 12 ps 1.3
set style line 19 lc rgb "#D55E00" lw 2 dt (10,4,2,4) pt 2 ps 1.3
set style line 20 lc rgb "#009E73" lw 2 dt (18,6,4,6,4,6) pt 3 ps 1.3
set style line 21 lc rgb "#CC79A7" lw 2 dt 1 pt 7 ps 1.3
set style line 22 lc rgb "#E69F00" lw 2 dt (10,5) pt 5 ps 1.3
set style line 23 lc rgb "#56B4E9" lw 2 dt (2,4) pt 9 ps 1.3
set style line 24 lc rgb "#7F7F7F" lw 2 dt (10,4,2,4) pt 13 ps 1.3
set border 3 lw 1
set tics nomirror out
set grid lc rgb "#d0d0d0" lw 1 dt 1
set key box lc rgb "#a0a0a0" samplen 3 spacing 1.1
set xlabel "training step"
set yrange [0:1]
set multiplot layout 8,1 title "Runs: relation F1 against the step (validation solid, band from the lowest to the highest seed; training sample dashed)"
set ylabel "relation F1 (micro)"
set title "learning-curves on synth-cdr (cells 1-3)"
set rmargin at screen 0.5545454545454546
set key outside right top vertical Left reverse maxrows 4 box lc rgb "#a0a0a0"
plot DAT index 0 using 1:3:4 with filledcurves ls 1 fs transparent solid 0.15 noborder notitle, \
     DAT index 0 using 1:2 with linespoints ls 1 dt 1 title "NTCRE (1 seed)", \
     DAT index 1 using 1:2 with lines ls 1 dt 2 notitle, \
     DAT index 2 using 1:3:4 with filledcurves ls 2 fs transparent solid 0.15 noborder notitle, \
     DAT index 2 using 1:2 with linespoints ls 2 dt 1 title "NTCRE-CPD (1 seed)", \
     DAT index 3 using 1:2 with lines ls 2 dt 2 notitle, \
     DAT index 4 using 1:3:4 with filledcurves ls 3 fs transparent solid 0.15 noborder notitle, \
     DAT index 4 using 1:2 with linespoints ls 3 dt 1 title "UTRE (1 seed)", \
     DAT index 5 using 1:2 with lines ls 3 dt 2 notitle, \
     0.3449294387922547 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
set ylabel "relation F1 (micro)"
set title "learning-curves on synth-cdr (cells 4-6)"
set rmargin at screen 0.5545454545454546
set key outside right top vertical Left reverse maxrows 4 box lc rgb "#a0a0a0"
plot DAT index 6 using 1:3:4 with filledcurves ls 4 fs transparent solid 0.15 noborder notitle, \
     DAT index 6 using 1:2 with linespoints ls 4 dt 1 title "UTRE-CPD (1 seed)", \
     DAT index 7 using 1:2 with lines ls 4 dt 2 notitle, \
     DAT index 8 using 1:3:4 with filledcurves ls 5 fs transparent solid 0.15 noborder notitle, \
     DAT index 8 using 1:2 with linespoints ls 5 dt 1 title "bran (1 seed)", \
     DAT index 9 using 1:2 with lines ls 5 dt 2 notitle, \
     DAT index 10 using 1:3:4 with filledcurves ls 6 fs transparent solid 0.15 noborder notitle, \
     DAT index 10 using 1:2 with linespoints ls 6 dt 1 title "cnn (1 seed)", \
     DAT index 11 using 1:2 with lines ls 6 dt 2 notitle, \
     0.3449294387922547 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
set ylabel "relation F1 (micro)"
set title "learning-curves-ctd on synth-ctd"
set rmargin at screen 0.5545454545454546
set key outside right top vertical Left reverse maxrows 5 box lc rgb "#a0a0a0"
plot DAT index 12 using 1:3:4 with filledcurves ls 7 fs transparent solid 0.15 noborder notitle, \
     DAT index 12 using 1:2 with linespoints ls 7 dt 1 title "NTCRE-CPD_d16 (1 seed)", \
     DAT index 13 using 1:2 with lines ls 7 dt 2 notitle, \
     DAT index 14 using 1:3:4 with filledcurves ls 8 fs transparent solid 0.15 noborder notitle, \
     DAT index 14 using 1:2 with linespoints ls 8 dt 1 title "NTCRE-CPD_d32 (1 seed)", \
     DAT index 15 using 1:2 with lines ls 8 dt 2 notitle, \
     DAT index 16 using 1:3:4 with filledcurves ls 9 fs transparent solid 0.15 noborder notitle, \
     DAT index 16 using 1:2 with linespoints ls 9 dt 1 title "bran_d16 (1 seed)", \
     DAT index 17 using 1:2 with lines ls 9 dt 2 notitle, \
     DAT index 18 using 1:3:4 with filledcurves ls 10 fs transparent solid 0.15 noborder notitle, \
     DAT index 18 using 1:2 with linespoints ls 10 dt 1 title "bran_d32 (1 seed)", \
     DAT index 19 using 1:2 with lines ls 10 dt 2 notitle, \
     0.05568096313017306 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
set ylabel "relation F1 (micro)"
set title "learning-curves-ctd-gpu on synth-ctd"
set rmargin at screen 0.5545454545454546
set key outside right top vertical Left reverse maxrows 5 box lc rgb "#a0a0a0"
plot DAT index 20 using 1:3:4 with filledcurves ls 11 fs transparent solid 0.15 noborder notitle, \
     DAT index 20 using 1:2 with linespoints ls 11 dt 1 title "NTCRE-CPD_d32 (1 seed)", \
     DAT index 21 using 1:2 with lines ls 11 dt 2 notitle, \
     DAT index 22 using 1:3:4 with filledcurves ls 12 fs transparent solid 0.15 noborder notitle, \
     DAT index 22 using 1:2 with linespoints ls 12 dt 1 title "NTCRE-CPD_d64 (1 seed)", \
     DAT index 23 using 1:2 with lines ls 12 dt 2 notitle, \
     DAT index 24 using 1:3:4 with filledcurves ls 13 fs transparent solid 0.15 noborder notitle, \
     DAT index 24 using 1:2 with linespoints ls 13 dt 1 title "bran_d32 (1 seed)", \
     DAT index 25 using 1:2 with lines ls 13 dt 2 notitle, \
     DAT index 26 using 1:3:4 with filledcurves ls 14 fs transparent solid 0.15 noborder notitle, \
     DAT index 26 using 1:2 with linespoints ls 14 dt 1 title "bran_d64 (1 seed)", \
     DAT index 27 using 1:2 with lines ls 14 dt 2 notitle, \
     0.05568096313017306 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
set ylabel "relation F1 (micro)"
set title "learning-curves-ctd-long on synth-ctd"
set rmargin at screen 0.5545454545454546
set key outside right top vertical Left reverse maxrows 2 box lc rgb "#a0a0a0"
plot DAT index 28 using 1:3:4 with filledcurves ls 15 fs transparent solid 0.15 noborder notitle, \
     DAT index 28 using 1:2 with linespoints ls 15 dt 1 title "bran (1 seed)", \
     DAT index 29 using 1:2 with lines ls 15 dt 2 notitle, \
     0.05568096313017306 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
set ylabel "relation F1 (micro)"
set title "learning-curves-ctd-margin on synth-ctd"
set rmargin at screen 0.5545454545454546
set key outside right top vertical Left reverse maxrows 2 box lc rgb "#a0a0a0"
plot DAT index 30 using 1:3:4 with filledcurves ls 16 fs transparent solid 0.15 noborder notitle, \
     DAT index 30 using 1:2 with linespoints ls 16 dt 1 title "bran (1 seed)", \
     DAT index 31 using 1:2 with lines ls 16 dt 2 notitle, \
     0.05568096313017306 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
set ylabel "relation F1 (micro)"
set title "learning-curves-semeval on synth-semeval"
set rmargin at screen 0.5545454545454546
set key outside right top vertical Left reverse maxrows 5 box lc rgb "#a0a0a0"
plot DAT index 32 using 1:3:4 with filledcurves ls 17 fs transparent solid 0.15 noborder notitle, \
     DAT index 32 using 1:2 with linespoints ls 17 dt 1 title "NTCRE-CPD_subtask1.1 (1 seed)", \
     DAT index 33 using 1:2 with lines ls 17 dt 2 notitle, \
     DAT index 34 using 1:3:4 with filledcurves ls 18 fs transparent solid 0.15 noborder notitle, \
     DAT index 34 using 1:2 with linespoints ls 18 dt 1 title "NTCRE-CPD_subtask1.2 (1 seed)", \
     DAT index 35 using 1:2 with lines ls 18 dt 2 notitle, \
     DAT index 36 using 1:3:4 with filledcurves ls 19 fs transparent solid 0.15 noborder notitle, \
     DAT index 36 using 1:2 with linespoints ls 19 dt 1 title "UTRE-CPD_subtask1.1 (1 seed)", \
     DAT index 37 using 1:2 with lines ls 19 dt 2 notitle, \
     DAT index 38 using 1:3:4 with filledcurves ls 20 fs transparent solid 0.15 noborder notitle, \
     DAT index 38 using 1:2 with linespoints ls 20 dt 1 title "UTRE-CPD_subtask1.2 (1 seed)", \
     DAT index 39 using 1:2 with lines ls 20 dt 2 notitle, \
     0.22320441988950274 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
set ylabel "relation F1 (micro)"
set title "learning-curves-semeval-emb on synth-semeval"
set rmargin at screen 0.5545454545454546
set key outside right top vertical Left reverse maxrows 5 box lc rgb "#a0a0a0"
plot DAT index 40 using 1:3:4 with filledcurves ls 21 fs transparent solid 0.15 noborder notitle, \
     DAT index 40 using 1:2 with linespoints ls 21 dt 1 title "NTCRE-CPD_subtask1.1_random (1 seed)", \
     DAT index 41 using 1:2 with lines ls 21 dt 2 notitle, \
     DAT index 42 using 1:3:4 with filledcurves ls 22 fs transparent solid 0.15 noborder notitle, \
     DAT index 42 using 1:2 with linespoints ls 22 dt 1 title "NTCRE-CPD_subtask1.1_word2vec (1 seed)", \
     DAT index 43 using 1:2 with lines ls 22 dt 2 notitle, \
     DAT index 44 using 1:3:4 with filledcurves ls 23 fs transparent solid 0.15 noborder notitle, \
     DAT index 44 using 1:2 with linespoints ls 23 dt 1 title "UTRE-CPD_subtask1.1_random (1 seed)", \
     DAT index 45 using 1:2 with lines ls 23 dt 2 notitle, \
     DAT index 46 using 1:3:4 with filledcurves ls 24 fs transparent solid 0.15 noborder notitle, \
     DAT index 46 using 1:2 with linespoints ls 24 dt 1 title "UTRE-CPD_subtask1.1_word2vec (1 seed)", \
     DAT index 47 using 1:2 with lines ls 24 dt 2 notitle, \
     0.22320441988950274 with lines lc rgb "#808080" dt 3 lw 1.5 title "every pair (test)"
unset multiplot
unset output
}
