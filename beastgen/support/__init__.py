"""Support: what every layer may use and that knows nothing of spaces, devices or tuning: tables,
progress lines, times and thresholds (units), atomic output files, Ctrl-C around compiled work, room
for deeply nested expressions, names imported on first use, and the generated directory (its
default and its trust check)."""
