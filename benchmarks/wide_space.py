"""A wide space for bench_distributed.py: 4 levels, 450 x 450 = 202,500 split nodes, each with an
inner x inner subtree (--set inner=N; a 1-in-11 filter reads every level)."""
import beastgen as beast

inner = beast.setting(60)
a = beast.range(0, 450)
b = beast.range(0, 450)
c = beast.range(0, inner)
d = beast.range(0, inner)
f = beast.filter((a * 7 + b * 3 + c * 5 + d) % 11 == 0)
