# Fig. 5.4: convergence of the new addition experiment (batch <= 10)
# Written by `mare report`. Data: fig5.4.dat, one block per series (blocks separated by two blank lines, selected with `index`).
# Re-plot in this directory with `gnuplot -d fig5.4.gp`: writes fig5.4.png and fig5.4.svg.
DAT = "fig5.4.dat"
do for [fmt in "png svg"] {
reset
if (fmt eq "png") {
  set terminal pngcairo size 1800,1136 font "DejaVu Sans,12" fontscale 2 linewidth 2 noenhanced
  set output "fig5.4.png"
} else {
  set terminal svg size 900,568 font "DejaVu Sans,12" linewidth 1 noenhanced
  set output "fig5.4.svg"
}
set encoding utf8
set style line 1 lc rgb "#000000" lw 2 dt 1 pt 7 ps 1.3
set style line 2 lc rgb "#0072B2" lw 2 dt (10,5) pt 5 ps 1.3
set border 3 lw 1
set tics nomirror out
set grid lc rgb "#d0d0d0" lw 1 dt 1
set key box lc rgb "#a0a0a0" samplen 3 spacing 1.1
set title "convergence of the new addition experiment (batch <= 10)"
set xlabel "epoch"
set ylabel "mean squared error"
set logscale y
set format y "%.0e"
set key below maxcols 2 nobox font ",10"
plot DAT index 0 using 1:($2 > 0 ? $2 : NaN) with linespoints ls 1 dt 1 pi 10 title "r3_grpu_b10 train (3 runs, mean)", \
     DAT index 1 using 1:($2 > 0 ? $2 : NaN) with linespoints ls 1 dt (10,5) pi 10 title "r3_grpu_b10 test (3 runs, mean)", \
     DAT index 2 using 1:($2 > 0 ? $2 : NaN) with linespoints ls 2 dt 1 pi 10 title "r4_grpu_b10_cur train (3 runs, mean)", \
     DAT index 3 using 1:($2 > 0 ? $2 : NaN) with linespoints ls 2 dt (10,5) pi 10 title "r4_grpu_b10_cur test (3 runs, mean)", \
     DAT index 4 using 1:2 with points ls 1 pt 4 ps 3 title "r3_grpu_b10 train, Table 5.1 (published)", \
     DAT index 5 using 1:2 with points ls 1 pt 8 ps 3 title "r3_grpu_b10 test, Table 5.1 (published)", \
     DAT index 6 using 1:2 with points ls 2 pt 4 ps 3 title "r4_grpu_b10_cur train, Table 5.1 (published)", \
     DAT index 7 using 1:2 with points ls 2 pt 8 ps 3 title "r4_grpu_b10_cur test, Table 5.1 (published)"
unset output
}
