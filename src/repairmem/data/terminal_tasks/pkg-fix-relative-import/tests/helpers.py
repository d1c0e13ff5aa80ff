def fmt_sum(a, b):
    return f"{a} + {b} = {a + b}"
