python3 - <<'EOF'
import numpy as np
rng = np.random.default_rng(7)
x = np.linspace(0, 10, 40)
y = 2.5 * x - 1.0 + rng.normal(0, 0.4, x.size)
with open("data.csv", "w") as fh:
    fh.write("x,y\n")
    for a, b in zip(x, y):
        fh.write(f"{a:.6f},{b:.6f}\n")
EOF
