python3 - <<'EOF'
import json
import numpy as np
data = np.loadtxt("data.csv", delimiter=",", skiprows=1)
A = np.column_stack([data[:, 0], np.ones(len(data))])
(slope, intercept), *_ = np.linalg.lstsq(A, data[:, 1], rcond=None)
got = json.load(open("fit.json"))
assert set(got) >= {"slope", "intercept"}, got
assert abs(got["slope"] - slope) < 1e-6 and abs(got["intercept"] - intercept) < 1e-6, (got, slope, intercept)
print("ok")
EOF
