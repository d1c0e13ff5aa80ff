python3 - <<'EOF'
import numpy as np
rng = np.random.default_rng(3)
m = rng.normal(size=(6, 4))
m[2] = 0.0
m[4] *= 1000
np.save("matrix.npy", m)
EOF
