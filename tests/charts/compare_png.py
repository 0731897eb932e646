#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A rendered chart against its committed reference, by structure rather than by pixel.

Both PNGs are decoded here (zlib and the five PNG row filters, no imaging library), composited over white and
cut into 16x16-pixel cells; each cell's mean colour must match the reference's within TOLERANCE per channel in
all but one cell in a thousand. Hinting or anti-aliasing moves a cell mean by a few levels; a missing
capacity line, legend row, shade, mark or bar moves several. Usage: compare_png.py RENDERED.png REFERENCE.png
"""
import struct
import sys
import zlib

CELL, TOLERANCE, SHARE = 16, 24, 0.999


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        sys.exit(f"{path}: only 8-bit RGB or RGBA, not interlaced (got depth {depth}, colour {colour})")
    channels = 4 if colour == 6 else 3
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    return width, height, channels, rows


def cells(image):
    width, height, channels, rows = image
    means = {}
    for cy in range(0, height, CELL):
        for cx in range(0, width, CELL):
            total, n = [0, 0, 0], 0
            for y in range(cy, min(cy + CELL, height)):
                row = rows[y]
                for x in range(cx, min(cx + CELL, width)):
                    px = row[x * channels:(x + 1) * channels]
                    alpha = px[3] / 255 if channels == 4 else 1
                    for k in range(3):
                        total[k] += px[k] * alpha + 255 * (1 - alpha)
                    n += 1
            means[(cx, cy)] = [t / n for t in total]
    return means


def main():
    rendered, reference = decode(sys.argv[1]), decode(sys.argv[2])
    if rendered[:2] != reference[:2]:
        sys.exit(f"{sys.argv[1]}: {rendered[0]}x{rendered[1]} pixels, the reference is {reference[0]}x{reference[1]}")
    got, want = cells(rendered), cells(reference)
    differ = [c for c in want if max(abs(g - w) for g, w in zip(got[c], want[c])) > TOLERANCE]
    share = 1 - len(differ) / len(want)
    print(f"{sys.argv[1]}: {share:.1%} of {len(want)} cells match {sys.argv[2]}"
          + (f" (first differing cell at x {differ[0][0]}, y {differ[0][1]})" if differ else ""))
    sys.exit(0 if share >= SHARE else 1)


if __name__ == "__main__":
    main()
