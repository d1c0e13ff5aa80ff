python3 - <<'EOF'
import numpy as np
m = np.load("matrix.npy")
got = np.load("normalized.npy")
assert got.shape == m.shape and got.dtype == np.float64, (got.shape, got.dtype)
assert np.all(np.isfinite(got)), "NaN or inf in the result"
norms = np.linalg.norm(m, axis=1, keepdims=True)
expected = m / np.where(norms > 0, norms, 1.0)
assert np.allclose(got, expected, atol=1e-12), got
assert np.all(got[2] == 0.0)
print("ok")
EOF
