# Reference values of tests/stats/test_wilcoxon.cpp (and the quantiles of
# tests/stats/test_distributions.cpp) from R's own wilcox.test, psignrank/qsignrank
# and qwilcox, with the value each test uses beside each line ("test: ...").
#
#   Rscript stats/reference/wilcoxon_reference.R
#
# Run with R 4.2.2 (Debian 12's r-base-core) on 2026-11-29; its output is
# wilcoxon_reference.out beside this script. Every R value equals its "test:" value to the
# digits the test gives (the rank-sum approximate p with correction differs in the 17th
# significant digit), and the two approximate estimates lie where the convention below
# says; coin was not installed, so the exact conditional p-values were not printed. The
# ctest wilcoxon_reference_r runs this script again where Rscript is installed and compares
# its output with that file (a line whose R value differs from its "test:" comment is a
# finding).
#
# Needs R >= 4.0 (wilcox.test's estimate without continuity correction, the
# "(pseudo)median" root). The exact conditional p-values (ties, Method::conditional)
# need the coin package; zero_method = "zsplit" has no R counterpart (SciPy only).
#
# Convention where mare differs from R (documented in test_wilcoxon.cpp,
# Estimates.ApproxEstimateIsTheRootOfTheStatisticPinned): with the normal
# approximation R's estimate is uniroot(W, tol = 1e-4)$root of a step function W; mare
# returns the midpoint of the set where W changes sign, to machine precision. R's
# printed estimate is within 1e-4 of mare's where W jumps through 0, and anywhere in
# the interval where W is exactly 0 otherwise.

options(digits = 17)
show <- function(label, value, test) {
  cat(sprintf("%-58s %s   test: %s\n", label,
              paste(format(value, digits = 17), collapse = " "), test))
}

## ---- signed rank, one sample (SciPy's test_wilcoxon, from R) --------------------
d <- c(6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75)
r <- wilcox.test(d, conf.int = TRUE)
show("one-sample exact V", r$statistic, "96")
show("one-sample exact two-sided p", r$p.value, "0.041259765625")
show("one-sample exact conf.int", r$conf.int, "4 41.5")
show("one-sample exact estimate", r$estimate, "25")
show("one-sample exact greater p",
     wilcox.test(d, alternative = "greater")$p.value, "0.0206298828125")
show("one-sample exact less p",
     wilcox.test(d, alternative = "less")$p.value, "0.982330322265625 (32189/32768)")
show("one-sample approx, no correction, p",
     wilcox.test(d, exact = FALSE, correct = FALSE)$p.value, "0.04088813291185591")
show("one-sample approx estimate",
     wilcox.test(d, exact = FALSE, conf.int = TRUE)$estimate,
     "25 (mare: midpoint of (24.5, 25.5) where W = 0; R: a point of [24.5, 25.5])")
show("qsignrank(0.025, 15)", qsignrank(0.025, 15), "26")

## ---- signed rank, paired (R's ?wilcox.test, Hollander & Wolfe depression) --------
x <- c(1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30)
y <- c(0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29)
r <- wilcox.test(x, y, paired = TRUE, alternative = "greater", conf.int = TRUE)
show("depression greater V", r$statistic, "40")
show("depression greater p", r$p.value, "0.01953125")
show("depression greater conf.int", r$conf.int, "0.175 Inf")
show("depression greater estimate", r$estimate, "0.46")
r <- wilcox.test(x, y, paired = TRUE, conf.int = TRUE)
show("depression two-sided p", r$p.value, "0.0390625")
show("depression two-sided conf.int", r$conf.int, "0.01 0.786")
show("qsignrank(0.025, 9), qsignrank(0.05, 9)", c(qsignrank(0.025, 9), qsignrank(0.05, 9)),
     "6 9")
show("psignrank(5, 9) * 512", psignrank(5, 9) * 512, "10")

## ---- signed rank, paired, normal approximation (SciPy / R) -----------------------
x <- c(120, 114, 181, 188, 180, 146, 121, 191, 132, 113, 127, 112)
y <- c(133, 143, 119, 189, 112, 199, 198, 113, 115, 121, 142, 187)
show("approx paired V", wilcox.test(x, y, paired = TRUE, exact = FALSE)$statistic, "34")
show("approx paired p, no correction",
     wilcox.test(x, y, paired = TRUE, exact = FALSE, correct = FALSE)$p.value,
     "0.6948866023724735")
show("approx paired p, corrected",
     wilcox.test(x, y, paired = TRUE, exact = FALSE, correct = TRUE)$p.value,
     "0.7240816609153895")

## ---- rank sum (SciPy's test_mannwhitneyu) ----------------------------------------
x <- c(19, 22, 16, 29, 24)
y <- c(20, 11, 17, 12)
show("rank-sum exact W", wilcox.test(x, y)$statistic, "17")
show("rank-sum exact p", wilcox.test(x, y)$p.value, "0.1111111111111111")
show("rank-sum approx p, corrected", wilcox.test(x, y, exact = FALSE)$p.value,
     "0.11134688653314041")
show("rank-sum approx p, no correction",
     wilcox.test(x, y, exact = FALSE, correct = FALSE)$p.value, "0.0864107329737")

## ---- rank sum, permeability (R's ?wilcox.test) -----------------------------------
x <- c(0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46)
y <- c(1.15, 0.88, 0.90, 0.74, 1.21)
show("permeability W", wilcox.test(x, y)$statistic, "35")
show("permeability less p", wilcox.test(x, y, alternative = "less")$p.value, "0.8967698967699")
show("permeability greater p", wilcox.test(x, y, alternative = "greater")$p.value,
     "0.1272061272061 (382/3003)")
show("permeability two-sided p", wilcox.test(x, y)$p.value, "0.2544122544123")
r <- wilcox.test(x, y, conf.int = TRUE)
show("permeability conf.int", r$conf.int, "-0.15 0.76")
show("permeability estimate", r$estimate, "0.305")
show("permeability greater conf.int",
     wilcox.test(x, y, alternative = "greater", conf.int = TRUE)$conf.int, "-0.08 Inf")
show("permeability greater approx p, no correction",
     wilcox.test(x, y, alternative = "greater", exact = FALSE, correct = FALSE)$p.value,
     "0.11033568095992344 (R's doc: 0.1103)")
show("qwilcox(0.025, 10, 5), qwilcox(0.05, 10, 5)", c(qwilcox(0.025, 10, 5), qwilcox(0.05, 10, 5)),
     "9 12")

## ---- ties and zeros: d with |2| x3, 4 x3 and one zero ----------------------------
d <- c(1, 2, 2, -3, 4, 4, 4, -5, 6, 0, -2, 7)
r <- suppressWarnings(wilcox.test(d, conf.int = TRUE))
show("tied one-sample V (zeros dropped)", r$statistic, "49")
show("tied one-sample p (approx, corrected)", r$p.value, "0.1664816692119594")
show("tied one-sample p (approx, no correction)",
     suppressWarnings(wilcox.test(d, correct = FALSE))$p.value, "0.15322569812768455")
show("tied one-sample greater p (corrected)",
     suppressWarnings(wilcox.test(d, alternative = "greater"))$p.value, "0.0832408346059797")
show("tied one-sample estimate", r$estimate,
     "2 (W jumps through 0 at 2; R within 1e-4; hodges_lehmann = 2)")
print(tryCatch(wilcox.test(d, conf.int = TRUE), warning = function(w) conditionMessage(w)))

## ---- all values equal: R's undefined interval ------------------------------------
r <- suppressWarnings(wilcox.test(c(2, 2, 2), conf.int = TRUE))
show("{2, 2, 2} p", r$p.value, "0.14891467317876567")
show("{2, 2, 2} conf.int, estimate", c(r$conf.int, r$estimate), "NaN NaN 2")

## ---- unachievable conf.level -----------------------------------------------------
r <- suppressWarnings(wilcox.test(c(1.5, 2.5, 4.0), conf.int = TRUE))
show("{1.5, 2.5, 4} conf.int", r$conf.int, "1.5 4")
show("{1.5, 2.5, 4} conf.level", attr(r$conf.int, "conf.level"), "0.75")
r <- suppressWarnings(wilcox.test(c(1, 2), c(3, 4), conf.int = TRUE))
show("{1, 2} vs {3, 4} conf.int, estimate, p", c(r$conf.int, r$estimate, r$p.value),
     "-3 -1 -2 0.3333333333333333")
show("{1, 2} vs {3, 4} conf.level", attr(r$conf.int, "conf.level"), "0.6666666666666667")

## ---- rank sum with ties across and within samples --------------------------------
x <- c(1, 2, 2, 3, 5, 8)
y <- c(2, 3, 4, 4, 6, 7, 7)
r <- suppressWarnings(wilcox.test(x, y, conf.int = TRUE))
show("tied rank-sum W", r$statistic, "13.5")
show("tied rank-sum p (approx, corrected)", r$p.value, "0.3126120479134945")
show("tied rank-sum p (approx, no correction)",
     suppressWarnings(wilcox.test(x, y, correct = FALSE))$p.value, "0.2793050615222084")
show("tied rank-sum estimate", r$estimate,
     "-1.5 (mare: midpoint of (-2, -1) where W = 0; R: a point of it; hodges_lehmann = -1.5)")
show("qwilcox(0.025, 6, 7)", qwilcox(0.025, 6, 7), "7")

## ---- exact conditional distributions (coin) --------------------------------------
if (requireNamespace("coin", quietly = TRUE)) {
  d <- c(1, 2, 2, -3, 4, 4, 4, -5, 6, 0, -2, 7)
  for (zm in c("Wilcoxon", "Pratt")) {
    for (alt in c("less", "greater", "two.sided")) {
      p <- coin::pvalue(coin::wilcoxsign_test(d ~ rep(0, length(d)), distribution = "exact",
                                              zero.method = zm, alternative = alt))
      show(paste("conditional signed rank", zm, alt), as.numeric(p),
           switch(paste(zm, alt),
                  "Wilcoxon less" = "0.927734375", "Wilcoxon greater" = "0.0859375",
                  "Wilcoxon two.sided" = "0.171875", "Pratt less" = "0.93408203125",
                  "Pratt greater" = "0.08447265625", "Pratt two.sided" = "0.1689453125"))
    }
  }
  x <- c(1, 2, 2, 3, 5, 8)
  y <- c(2, 3, 4, 4, 6, 7, 7)
  g <- factor(rep(c("x", "y"), c(length(x), length(y))))
  for (alt in c("less", "greater", "two.sided")) {
    p <- coin::pvalue(coin::wilcox_test(c(x, y) ~ g, distribution = "exact", alternative = alt))
    show(paste("conditional rank sum", alt), as.numeric(p),
         switch(alt, less = "0.15326340326340326", greater = "0.8583916083916084",
                two.sided = "0.30652680652680653"))
  }
} else {
  cat("coin not installed: the exact conditional p-values are not printed\n")
}
# Approximate p-values with zero_method pratt/zsplit (SignedRankTies.ApproxByZeroMethod)
# follow SciPy's wilcoxon(zero_method=...), not R; they are not reproduced here.
