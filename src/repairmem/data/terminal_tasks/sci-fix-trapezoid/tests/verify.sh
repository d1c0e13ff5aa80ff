set -eu
out=$(python3 integrate.py)
python3 - "$out" <<'EOF'
import sys
import numpy as np
from integrate import trapezoid
assert abs(float(sys.argv[1]) - 2.0) < 1e-5, sys.argv[1]
assert abs(trapezoid(lambda x: x ** 2, 0.0, 1.0, 3) - 0.375) < 1e-12
assert abs(trapezoid(lambda x: 3 * x + 1, 0.0, 2.0, 2) - 8.0) < 1e-12
assert abs(trapezoid(np.exp, 0.0, 1.0, 11) - 1.7197134913893146) < 1e-12
print("ok")
EOF
