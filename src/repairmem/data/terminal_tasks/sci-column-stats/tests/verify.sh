python3 - <<'EOF'
import json
import statistics
cols = {"temp": [21.5, 22.1, 19.8, 23.4, 20.0, 22.7], "pressure": [101.2, 100.9, 101.5, 100.4, 101.1, 100.7]}
got = json.load(open("summary.json"))
assert set(got) == set(cols), got
for name, values in cols.items():
    want = {"mean": statistics.fmean(values), "std": statistics.stdev(values), "min": min(values), "max": max(values)}
    assert set(got[name]) >= set(want), got[name]
    for key, value in want.items():
        assert abs(got[name][key] - value) < 1e-9, (name, key, got[name][key], value)
print("ok")
EOF
