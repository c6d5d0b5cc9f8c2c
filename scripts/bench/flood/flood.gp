# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# flood.gp - the chart of scripts/bench/flood.sh: gnuplot -e "dir='DIR'" flood.gp
# reads DIR/<defence>.dat (report.py) and writes DIR/flood.png; with
# -e "kind='spoofed'" the spoofed-source scenario's (sp_*.dat) and writes
# DIR/flood-spoofed.png.
# Columns: 1 gen_pps 2 rx_pps 3 busy_pct 4 ns_per_pkt 5 legit_err_pct 6 p50_ms 7 p99_ms
if (!exists("dir")) dir = "."
set terminal pngcairo size 1400,1000 font "DejaVu Sans,12" linewidth 2
if (!exists("kind")) kind = "steps"
sp = (kind eq "spoofed")
set output dir.(sp ? "/flood-spoofed.png" : "/flood.png")

# the defences that have data, in this order; the clients' panels without
# floor (it drops everything, clients included)
list = sp ? "sp_none sp_nft sp_ipt sp_xrl" : "floor none nft iptables xrl"
llist = sp ? list : "none nft iptables xrl"
names = system("cd '".dir."' && for n in ".list."; do [ -s $n.dat ] && printf '%s ' $n; done")
lnames = system("cd '".dir."' && for n in ".llist."; do [ -s $n.dat ] && printf '%s ' $n; done")
title(n) = (n eq "floor") ? "floor: bare XDP\\_DROP" : (n eq "none") ? "none (SYN cookies)" : (n eq "nft") ? "nftables" : (n eq "iptables") ? "iptables hashlimit" : (n eq "sp_none") ? "none (kernel SYN cookies)" : (n eq "sp_nft") ? "nftables synproxy" : (n eq "sp_ipt") ? "iptables SYNPROXY" : (n eq "sp_xrl") ? "xrl, syn\\_cookies: on" : "xrl (XDP)"
color(n) = (n eq "floor") ? "#000000" : (n eq "none" || n eq "sp_none") ? "#7f7f7f" : (n eq "nft" || n eq "sp_nft") ? "#1f77b4" : (n eq "iptables" || n eq "sp_ipt") ? "#ff7f0e" : "#2ca02c"
file(n) = dir."/".n.".dat"

set multiplot layout 2,2 title (sp ? "SYN flood from spoofed sources (a new one every SYN): receive cost and legitimate clients, per defence" : "SYN flood against a front end: receive cost and legitimate clients, per defence") font ",15"
set grid
set logscale x
set xrange [50000:3000000]
set xlabel "flood offered (packets/s, generator's rate)"
set format x "%.0s%c"
set style data linespoints
set pointsize 1.3

set title "Receive CPU per flood packet (NAPI kthread)"
set key top right
set ylabel "ns per packet"
set logscale y
set yrange [100:30000]
plot for [n in names] file(n) using 1:4 title title(n) lc rgb color(n) pt 7

set title "Receive kthread busy (100 % = CPU saturated)"
set key bottom right
set ylabel "% of one CPU"
unset logscale y
set yrange [0:105]
plot for [n in names] file(n) using 1:3 title title(n) lc rgb color(n) pt 7

set title "Legitimate clients: p99 latency (new connection + GET)"
set key top right
set ylabel "ms"
set logscale y
set yrange [1:*]
plot for [n in lnames] file(n) using 1:7 title title(n) lc rgb color(n) pt 7

set title "Legitimate clients: failed requests (timeout 3 s)"
set key top right
set ylabel "% of requests"
unset logscale y
set yrange [0:1<*]
plot for [n in lnames] file(n) using 1:5 title title(n) lc rgb color(n) pt 7

unset multiplot
