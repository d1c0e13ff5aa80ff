python3 - <<'EOF'
import numpy as np
m = np.load("matrix.npy")
norms = np.linalg.norm(m, axis=1, keepdims=True)
np.save("normalized.npy", m / np.where(norms > 0, norms, 1.0))
EOF
