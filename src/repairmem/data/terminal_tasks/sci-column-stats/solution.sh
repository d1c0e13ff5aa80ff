python3 - <<'EOF'
import json
import numpy as np
data = np.genfromtxt("measurements.csv", delimiter=",", names=True)
summary = {}
for name in data.dtype.names:
    col = data[name]
    summary[name] = {"mean": float(col.mean()), "std": float(col.std(ddof=1)), "min": float(col.min()),
                     "max": float(col.max())}
json.dump(summary, open("summary.json", "w"), indent=2)
EOF
