import numpy as np


def trapezoid(f, a, b, n):
    """Trapezoidal rule for the integral of f over [a, b] with n sample points (n - 1 intervals)."""
    x = np.linspace(a, b, n)
    y = f(x)
    h = (b - a) / n
    return h * (y.sum() - (y[0] + y[-1]) / 2)


if __name__ == "__main__":
    print(f"{trapezoid(np.sin, 0.0, np.pi, 1001):.6f}")
