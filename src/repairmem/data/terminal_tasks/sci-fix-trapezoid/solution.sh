sed -i 's|h = (b - a) / n$|h = (b - a) / (n - 1)|' integrate.py
