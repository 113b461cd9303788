#!/usr/bin/env python3
"""Derive the coefficients of gf_erf_fast (src/compute/fastmath.h): least-squares polynomial fits in double.

    |x| < 1:         erf(x)           = x * P(x^2),  P of degree 7
    1 <= x < 3.9:    erfc(x) exp(x^2) = Q(u),        u = (x - 2.5) / 1.5, Q of degree 12

Prints the coefficients (highest degree first, the order of the Horner code) and the worst absolute
error of a float32 evaluation against math.erf. Needs numpy (Debian: python3-numpy, /usr/bin/python3).
"""
import math

import numpy as np


def horner32(c, x):
    p = np.float32(c[-1])
    for k in range(len(c) - 2, -1, -1):
        p = p * np.float32(x) + np.float32(c[k])
    return p


def main():
    xa = np.linspace(0.0, 1.0, 4001)
    ya = np.array([math.erf(x) / x if x > 0 else 2 / math.sqrt(math.pi) for x in xa])
    ca = np.polynomial.polynomial.polyfit(xa * xa, ya, 7)
    xb = np.linspace(1.0, 4.0, 6001)
    yb = np.array([math.erfc(x) * math.exp(x * x) for x in xb])
    cb = np.polynomial.polynomial.polyfit((xb - 2.5) / 1.5, yb, 12)
    print("P (x^2, highest first):", ", ".join("%.17g" % c for c in ca[::-1]))
    print("Q (u, highest first):  ", ", ".join("%.17g" % c for c in cb[::-1]))
    worst = 0.0
    for x in np.linspace(0.0, 3.9, 20001, dtype=np.float32):
        if x < 1:
            e = x * horner32(ca, x * x)
        else:
            u = (x - np.float32(2.5)) * np.float32(1 / 1.5)
            e = np.float32(1) - np.float32(math.exp(-float(x) * float(x))) * horner32(cb, u)
        worst = max(worst, abs(float(e) - math.erf(float(x))))
    print("worst |error| of the float32 evaluation on [0, 3.9]: %.3g" % worst)


if __name__ == "__main__":
    main()
